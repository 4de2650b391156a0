// The pre-0.4 layout on real Git stores. The fixture is written by hand from spec 001 "Existing
// stores and migration" ("The untagged pre-0.4 development layout that appended SHA-256
// suffixes"): a store State Flow wrote is moved, with git mv, into cwd and session directories
// whose names carry a SHA-256 digest after Pi's names, and committed as that version would have.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTemporalState } from "../../storage/core/temporal.ts";
import {
  adoptSuffixedLayout,
  findSuffixedLayout,
  isSuffixed,
  layoutMoves,
  readSuffixedRevision,
} from "../../storage/legacy-layout.ts";
import { cwdKey } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, decodeBranchState, type SessionIdentity } from "../../storage/state-store.ts";
import { isStoreError } from "../../storage/store-error.ts";
import { TempDirs, git } from "../support/store-fixtures.ts";
import { preFourRepo, sha256, suffixedDirs } from "../support/pre-four.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

function identity(sessionId: string): SessionIdentity {
  return {
    cwd: "/work/project",
    cwdKey: cwdKey("/work/project"),
    sessionId,
    sessionKey: `2026-06-01T08-00-00-000Z_${sessionId}`,
  };
}
const ID = identity("0b5e7a1c-0000-4000-8000-000000000003");
const { cwdDir: CWD_DIR, sessionDir: SESSION_DIR } = suffixedDirs(ID);

/** A store with three transitions, then moved into the pre-0.4 layout and committed (HEAD). */
async function preFourStore() {
  const repo = await preFourRepo(temps, "sf-pre04-", ID, 3);
  const store = await openStore({ root: repo.dir, env: repo.env });
  return { ...repo, store, git: store.git! };
}

describe("isSuffixed", () => {
  it("accepts Pi's name with a hex digest (or a prefix of one) appended, directly or after - _ .", () => {
    for (const suffix of [`-${sha256("x")}`, sha256("x"), `_${"ab12".repeat(4)}`, ".0123abcd"])
      expect(isSuffixed(`--a-b--${suffix}`, "--a-b--"), suffix).toBe(true);
    for (const name of ["--a-b--", "--a-b---", "--a-b---ABCDEF12", "--a-b---1234567", "--a-b--x-12345678"])
      expect(isSuffixed(name, "--a-b--"), name).toBe(false);
  });
});

describe("findSuffixedLayout", () => {
  it("finds this session's directories by the identity in its meta.json, not by recomputing the digest", async () => {
    const f = await preFourStore();
    expect(await findSuffixedLayout(f.git, ID, f.revision)).toEqual({
      revision: f.revision,
      cwdDir: CWD_DIR,
      sessionDir: SESSION_DIR,
    });
    const native = git(f.dir, f.env, "rev-parse", "HEAD~1").trim();
    expect(await findSuffixedLayout(f.git, ID, native), "the Pi-native layout is no pre-0.4 layout").toBeNull();
    const other = identity("0b5e7a1c-0000-4000-8000-0000000000ff");
    expect(
      await findSuffixedLayout(f.git, other, f.revision),
      "another session's directory is not this one's",
    ).toBeNull();
  });

  it("refuses two directories that both claim this session", async () => {
    const f = await preFourStore();
    git(f.dir, f.env, "mv", "--", CWD_DIR, `${ID.cwdKey}-${"1".repeat(64)}`);
    git(f.dir, f.env, "checkout", "-q", f.revision, "--", ".");
    git(f.dir, f.env, "commit", "-q", "-m", "a copy");
    const head = git(f.dir, f.env, "rev-parse", "HEAD").trim();
    await expect(findSuffixedLayout(f.git, ID, head)).rejects.toSatisfy((e) => isStoreError(e, "ambiguous-snapshot"));
  });
});

describe("readSuffixedRevision", () => {
  it("is readable at its historical revision: the same runtime, history included, nothing moved", async () => {
    const f = await preFourStore();
    git(f.dir, f.env, "commit", "-q", "--allow-empty", "-m", "later");
    const layout = (await findSuffixedLayout(f.git, ID, f.revision))!;
    const runtime = decodeBranchState(await readSuffixedRevision(f.git, layout, ID), ID)!;
    expect(runtime.pointer.revision).toBe(f.revision);
    for (const offset of [0, 1, 2, 3])
      expect(readTemporalState(runtime.view, offset), `state[${offset}]`).toEqual(
        readTemporalState(f.before.view, offset),
      );
    expect(git(f.dir, f.env, "status", "--porcelain")).toBe("");
  });
});

describe("adoptSuffixedLayout", () => {
  it("moves the exact files to Pi-native paths in one commit; the revision decodes as before", async () => {
    const f = await preFourStore();
    const layout = (await findSuffixedLayout(f.git, ID, f.revision))!;
    const state = new StateStore(f.store, ID);
    const receipt = (await adoptSuffixedLayout(f.store, layout, ID, async (p) => void (await state.loadPointer(p))))!;
    const adopted = await state.loadPointer(receipt.pointer);
    expect(adopted.view).toEqual(f.before.view);
    for (const [old, native] of layoutMoves(layout, ID)) {
      expect(git(f.dir, f.env, "show", `${receipt.pointer.revision}:${native}`)).toBe(
        git(f.dir, f.env, "show", `${f.revision}:${old}`),
      );
    }
    expect(git(f.dir, f.env, "ls-files", "--", CWD_DIR)).toBe("");
    expect(git(f.dir, f.env, "rev-parse", `${receipt.pointer.revision}~1`).trim()).toBe(f.revision);
    expect(await adoptSuffixedLayout(f.store, layout, ID), "nothing left to move").toBeNull();
  });

  it("refuses a Pi-native copy beside the pre-0.4 one, before writing anything", async () => {
    const f = await preFourStore();
    git(f.dir, f.env, "checkout", "-q", `${f.revision}~1`, "--", ID.cwdKey);
    git(f.dir, f.env, "commit", "-q", "-m", "both layouts");
    const head = git(f.dir, f.env, "rev-parse", "HEAD").trim();
    const layout = (await findSuffixedLayout(f.git, ID, head))!;
    await expect(adoptSuffixedLayout(f.store, layout, ID)).rejects.toSatisfy(
      (e) => isStoreError(e, "ambiguous-snapshot") && /both exist/.test((e as Error).message),
    );
    expect(git(f.dir, f.env, "rev-parse", "HEAD").trim()).toBe(head);
  });

  it("rolls back exactly when the adopted revision does not verify", async () => {
    const f = await preFourStore();
    const layout = (await findSuffixedLayout(f.git, ID, f.revision))!;
    const refuse = async () => {
      throw new Error("does not decode");
    };
    await expect(adoptSuffixedLayout(f.store, layout, ID, refuse)).rejects.toSatisfy(
      (e) => isStoreError(e, "migration-failed") && /restored exactly/.test((e as Error).message),
    );
    expect(git(f.dir, f.env, "rev-parse", "HEAD^{tree}").trim()).toBe(
      git(f.dir, f.env, "rev-parse", `${f.revision}^{tree}`).trim(),
    );
    expect(git(f.dir, f.env, "status", "--porcelain")).toBe("");
  });

  it("leaves bytes another writer put there after the adoption, and says so", async () => {
    const f = await preFourStore();
    const layout = (await findSuffixedLayout(f.git, ID, f.revision))!;
    const meddle = async () => {
      writeFileSync(join(f.dir, ID.cwdKey, "meta.json"), "{}\n");
      git(f.dir, f.env, "commit", "-q", "-am", "someone else");
      throw new Error("does not decode");
    };
    await expect(adoptSuffixedLayout(f.store, layout, ID, meddle)).rejects.toSatisfy(
      (e) => isStoreError(e, "migration-failed") && /changed since it was published/.test((e as Error).message),
    );
  });
});
