import { existsSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import {
  acquirePublicationLock,
  lockExists,
  STABLE_READ_ATTEMPTS,
  pidIsGone,
  readLockOwner,
  readUntilSettled,
  withPublicationLock,
} from "../../../storage/fs/lock.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

describe("publication lock", () => {
  it("records the owner and releases", async () => {
    const path = join(temps.make(), "state-flow-publication.lock");
    const lock = await acquirePublicationLock(path, { generation: "g1" });
    const owner = await readLockOwner(path);
    expect(owner).toMatchObject({ pid: process.pid, host: hostname(), generation: "g1", purpose: "publication" });
    expect(await lockExists(path)).toBe(true);
    await lock.release();
    expect(existsSync(path)).toBe(false);
    await lock.release(); // idempotent
  });

  it("refuses a held lock with an actionable message and never steals it", async () => {
    const path = join(temps.make(), "state-flow-publication.lock");
    const first = await acquirePublicationLock(path, { generation: "g1" });
    const before = readFileSync(path, "utf8");
    const error = await acquirePublicationLock(path, { generation: "g2" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "lock-held", file: path });
    expect((error as Error).message).toContain(`pid ${process.pid}`);
    expect((error as Error).message).toContain(`remove ${path}`);
    expect((error as Error).message).toContain("still running");
    expect(readFileSync(path, "utf8")).toBe(before);
    await first.release();
  });

  it("reports a dead owner and a corrupt lock, still without stealing", async () => {
    const path = join(temps.make(), "state-flow-publication.lock");
    writeFileSync(
      path,
      JSON.stringify({
        pid: 2 ** 22 + 12345,
        host: hostname(),
        acquiredAt: "2020-01-01T00:00:00.000Z",
        generation: "old",
        token: "t",
      }),
    );
    await expect(acquirePublicationLock(path, { generation: "g" })).rejects.toMatchObject({
      code: "lock-held",
      message: expect.stringContaining("no longer running"),
    });
    writeFileSync(path, "garbage");
    await expect(acquirePublicationLock(path, { generation: "g" })).rejects.toMatchObject({
      code: "lock-held",
      message: expect.stringContaining("unreadable"),
    });
    expect(readFileSync(path, "utf8")).toBe("garbage");
  });

  it("detects a lock replaced under its holder", async () => {
    const path = join(temps.make(), "l.lock");
    const lock = await acquirePublicationLock(path, { generation: "g" });
    unlinkSync(path);
    await expect(lock.release()).rejects.toMatchObject({ code: "lock-lost" });
  });

  it("withPublicationLock releases after success and failure", async () => {
    const path = join(temps.make(), "l.lock");
    expect(await withPublicationLock(path, { generation: "g" }, async () => 7)).toBe(7);
    expect(existsSync(path)).toBe(false);
    await expect(
      withPublicationLock(path, { generation: "g" }, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(existsSync(path)).toBe(false);
  });

  it("tells a pid no process has from a running one (and never claims an invalid pid is gone)", () => {
    const exited = spawnSync(process.execPath, ["-e", ""]).pid;
    expect(pidIsGone(exited)).toBe(true);
    expect(pidIsGone(process.pid)).toBe(false);
    expect(pidIsGone(1)).toBe(false);
    expect(pidIsGone(0)).toBe(false);
    expect(pidIsGone(Number.NaN)).toBe(false);
  });
});

describe("publicationsOverlapError", () => {
  it("is a retryable lock-held that says what happened, not that someone holds the lock", async () => {
    const { publicationsOverlapError } = await import("../../../storage/fs/lock.ts");
    const error = publicationsOverlapError("/s/.git/state-flow-publication.lock", 8);
    expect(error.code).toBe("lock-held");
    expect(error.message).toContain("8 reads in a row each overlapped a publication");
    expect(error.message).not.toContain("is held by");
  });
});

describe("readUntilSettled", () => {
  const LOCK = "/s/.state-flow-publication.lock";

  it("returns the first read settle accepts, handing each read the one before it", async () => {
    const reads = ["a", "b", "b"];
    const seen: [string, string | null][] = [];
    const settled = await readUntilSettled(
      LOCK,
      async () => reads.shift()!,
      (read, previous) => {
        seen.push([read, previous]);
        return read === previous ? `settled on ${read}` : undefined;
      },
    );
    expect(settled).toBe("settled on b");
    expect(seen).toEqual([
      ["a", null],
      ["b", "a"],
      ["b", "b"],
    ]);
  });

  it("ends reads that keep disagreeing as the overlap error after STABLE_READ_ATTEMPTS re-reads", async () => {
    let reads = 0;
    const error = await readUntilSettled(
      LOCK,
      async () => ++reads,
      () => undefined,
    ).catch((e: unknown) => e);
    expect(reads).toBe(STABLE_READ_ATTEMPTS + 1);
    expect(error).toMatchObject({ code: "lock-held" });
    expect((error as Error).message).toContain(`${STABLE_READ_ATTEMPTS} reads in a row each overlapped`);
  });

  it("passes on what settle throws (a real divergence is not read again)", async () => {
    let reads = 0;
    const diverged = new Error("diverged");
    await expect(
      readUntilSettled(
        LOCK,
        async () => ++reads,
        () => {
          throw diverged;
        },
      ),
    ).rejects.toBe(diverged);
    expect(reads).toBe(1);
  });
});
