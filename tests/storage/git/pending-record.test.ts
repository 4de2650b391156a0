// The durable pending-publication record in a real repository's git dir.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readPendingRecord, writePendingRecord } from "../../../storage/git/pending-record.ts";
import { isStoreError } from "../../../storage/store-error.ts";
import { TempDirs, git, initRepo } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const key = "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555";
const sha = "a".repeat(40);

describe("the pending-publication record", () => {
  it("is absent until written; round-trips pending and settled; lives in the git dir, not the worktree", async () => {
    const { dir, env } = initRepo(temps, "sf-pending-");
    const commonDir = join(dir, ".git");
    expect(await readPendingRecord(commonDir, key)).toBeNull();
    await writePendingRecord(commonDir, key, { state: "pending", revision: sha, attempts: 2, lastError: "offline" });
    expect(await readPendingRecord(commonDir, key)).toEqual({
      state: "pending",
      revision: sha,
      attempts: 2,
      lastError: "offline",
    });
    expect(readFileSync(join(commonDir, "state-flow/pending", `${key}.json`), "utf8")).toBe(
      `{"state":"pending","revision":"${sha}","attempts":2,"lastError":"offline"}\n`,
    );
    await writePendingRecord(commonDir, key, { state: "settled", revision: sha });
    expect(await readPendingRecord(commonDir, key)).toEqual({ state: "settled", revision: sha });
    expect(git(dir, env, "status", "--porcelain", "--ignored"), "never part of the worktree").toBe("");
  });

  it("a malformed record is a named error that says what to do, and changes nothing", async () => {
    const { dir } = initRepo(temps, "sf-pending-");
    const commonDir = join(dir, ".git");
    const path = join(commonDir, "state-flow/pending", `${key}.json`);
    mkdirSync(join(commonDir, "state-flow/pending"), { recursive: true });
    for (const bad of [
      "not json",
      "{}",
      `{"state":"pending","revision":"${sha}","attempts":-1}`,
      `{"state":"pending","revision":"${sha}"}`,
      `{"state":"settled","revision":"HEAD"}`,
      `{"state":"pending","revision":"${sha}","attempts":0,"lastError":7}`,
    ]) {
      writeFileSync(path, bad);
      const error = await readPendingRecord(commonDir, key).catch((e: unknown) => e);
      expect(isStoreError(error, "invalid-pending-record"), bad).toBe(true);
      expect((error as Error).message).toMatch(/Delete the file: the session then reconciles its selected revision/);
      expect(readFileSync(path, "utf8")).toBe(bad);
    }
  });
});
