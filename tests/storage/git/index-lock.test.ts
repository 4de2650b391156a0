import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  INDEX_LOCK_STAMP,
  createIndexLock,
  indexLockStamp,
  installIndex,
  isIndexFile,
  isolatedIndexPath,
  readIndexLockHolder,
  releaseIndexLock,
} from "../../../storage/git/index-lock.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid;
const stampOf = (pid: number) => `state-flow index.lock pid=${pid} host=${hostname()} token=00ff\n`;

describe("git's index.lock as a publication holds it", () => {
  it("creates the lock with this process's stamp and releases only its own", async () => {
    const lock = join(temps.make("sf-ilock-"), "index.lock");
    const stamp = indexLockStamp();
    expect(stamp).toMatch(INDEX_LOCK_STAMP);
    await createIndexLock("/store", lock, stamp);
    expect(readFileSync(lock, "latin1")).toBe(stamp);
    await releaseIndexLock(lock, "someone else's stamp\n");
    expect(existsSync(lock)).toBe(true);
    await releaseIndexLock(lock, stamp);
    expect(existsSync(lock)).toBe(false);
  });

  it("a lock a dead State Flow process stamped is stale and taken; anyone else's is refused by name", async () => {
    const dir = temps.make("sf-ilock-");
    const lock = join(dir, "index.lock");
    writeFileSync(lock, stampOf(deadPid()));
    expect((await readIndexLockHolder(lock)).stale).toBe(true);
    await createIndexLock(dir, lock, indexLockStamp());
    writeFileSync(lock, "");
    expect(await readIndexLockHolder(lock)).toEqual({ stale: false, description: "another git process" });
    const error = await createIndexLock(dir, lock, indexLockStamp()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "index-locked", file: lock });
    expect((error as Error).message).toContain(`If no git process is running in ${dir}, remove ${lock} and retry.`);
    writeFileSync(lock, stampOf(process.ppid));
    expect(await readIndexLockHolder(lock)).toEqual({
      stale: false,
      description: `State Flow pid ${process.ppid} on ${hostname()}`,
    });
  });

  it("recognises an index file by its signature", () => {
    expect(isIndexFile(Buffer.from("DIRC\0\0\0\x02"))).toBe(true);
    expect(isIndexFile(Buffer.from(stampOf(1)))).toBe(false);
  });

  it("installs an index through index.lock, leaving neither the source nor the lock", async () => {
    const gitDir = temps.make("sf-ilock-");
    writeFileSync(join(gitDir, "index"), "old");
    const isolated = isolatedIndexPath(gitDir);
    expect(isolated).toMatch(new RegExp(`^${gitDir}/state-flow-index\\.${process.pid}\\.[0-9a-f]{12}$`));
    expect(isolatedIndexPath(gitDir)).not.toBe(isolated);
    writeFileSync(isolated, "new");
    await installIndex(gitDir, isolated);
    expect(readFileSync(join(gitDir, "index"), "utf8")).toBe("new");
    expect([existsSync(isolated), existsSync(join(gitDir, "index.lock"))]).toEqual([false, false]);
  });
});
