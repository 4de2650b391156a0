import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { prepareOwnedFilesAtomic, sha256Hex } from "../../../storage/fs/fs-safe.ts";
import { acquirePublicationLock } from "../../../storage/fs/lock.ts";
import {
  discardTemps,
  finishBeforeReading,
  readJournal,
  removeJournal,
  rollForward,
  writeJournal,
  type Journal,
} from "../../../storage/fs/journal.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

const bytes = (text: string) => Buffer.from(text, "utf8");

/** A store with `a` and `b/c` holding old bytes and a journal whose temp copies hold new ones. */
async function interrupted(): Promise<{ root: string; path: string; journal: Journal }> {
  const root = temp.make();
  mkdirSync(join(root, "b"));
  writeFileSync(join(root, "a"), "old a");
  writeFileSync(join(root, "b/c"), "old c");
  writeFileSync(join(root, "gone"), "old gone");
  const prepared = await prepareOwnedFilesAtomic(root, [
    ["a", bytes("new a")],
    ["b/c", bytes("new c")],
  ]);
  const journal: Journal = {
    version: 1,
    pid: 1,
    generation: "g",
    entries: [
      { path: "a", temp: prepared.temps[0]!, before: sha256Hex("old a"), after: sha256Hex("new a") },
      { path: "b/c", temp: prepared.temps[1]!, before: sha256Hex("old c"), after: sha256Hex("new c") },
      { path: "gone", temp: null, before: sha256Hex("old gone"), after: null },
    ],
  };
  const path = join(root, ".journal");
  await writeJournal(path, journal);
  return { root, path, journal };
}

describe("publication journal", () => {
  it("is written whole and owner-only, and read back exactly", async () => {
    const { path, journal } = await interrupted();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await readJournal(path)).toEqual(journal);
    await removeJournal(path);
    expect(await readJournal(path)).toBeNull();
  });

  it("rolls a half-switched cohort forward to the new bytes, idempotently", async () => {
    const { root, path, journal } = await interrupted();
    // The kill came after the first rename: `a` is new, `b/c` still old, `gone` still there.
    const { rename } = await import("node:fs/promises");
    await rename(journal.entries[0]!.temp!, join(root, "a"));
    await rollForward(root, path, journal);
    expect(readFileSync(join(root, "a"), "utf8")).toBe("new a");
    expect(readFileSync(join(root, "b/c"), "utf8")).toBe("new c");
    expect(existsSync(join(root, "gone"))).toBe(false);
    await rollForward(root, path, journal); // a recovery killed half-way is finished by the next one
    expect(readFileSync(join(root, "b/c"), "utf8")).toBe("new c");
  });

  it("stops with a named recovery-conflict when someone else wrote a member, changing nothing more", async () => {
    const { root, path, journal } = await interrupted();
    writeFileSync(join(root, "b/c"), "someone else");
    await expect(rollForward(root, path, journal)).rejects.toMatchObject({
      code: "recovery-conflict",
      message: expect.stringMatching(
        /stopped at b\/c: it holds .*someone else wrote there.*delete .*\.journal and retry/s,
      ),
    });
    expect(readFileSync(join(root, "b/c"), "utf8")).toBe("someone else");
    expect(existsSync(join(root, "gone"))).toBe(true);
  });

  it("discards the temp copies of a cohort that never switched", async () => {
    const { root, journal } = await interrupted();
    await discardTemps(journal);
    for (const entry of journal.entries) if (entry.temp) expect(existsSync(entry.temp)).toBe(false);
    expect(readFileSync(join(root, "a"), "utf8")).toBe("old a");
  });

  it("before a read, finishes an interrupted publication under the lock, or names the held lock", async () => {
    const { root, path } = await interrupted();
    const lock = join(root, ".lock");
    const held = await acquirePublicationLock(lock, { generation: "other" });
    let finished = 0;
    const finish = async () => void (finished += 1);
    await expect(finishBeforeReading(path, lock, "g", finish)).rejects.toMatchObject({ code: "lock-held" });
    expect(finished).toBe(0);
    await held.release();
    await finishBeforeReading(path, lock, "g", finish);
    expect(finished).toBe(1);
    expect(existsSync(lock)).toBe(false);
    await removeJournal(path);
    await finishBeforeReading(path, lock, "g", finish);
    expect(finished).toBe(1);
  });

  it("refuses a journal it did not write, by name", async () => {
    const root = temp.make();
    writeFileSync(join(root, ".journal"), "{not json");
    await expect(readJournal(join(root, ".journal"))).rejects.toMatchObject({
      code: "recovery-conflict",
      message: expect.stringMatching(/unreadable/),
    });
    writeFileSync(
      join(root, ".journal"),
      JSON.stringify({ version: 1, entries: [{ path: "a", temp: null, before: null, after: "x" }] }),
    );
    await expect(readJournal(join(root, ".journal"))).rejects.toMatchObject({ code: "recovery-conflict" });
  });
});
