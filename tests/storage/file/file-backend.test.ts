import { existsSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FILE_LOCK_NAME, filePointerOf, legacyFilePointerOf } from "../../../storage/cohort-basis.ts";
import { FileBackend } from "../../../storage/file/file-backend.ts";
import { acquirePublicationLock } from "../../../storage/fs/lock.ts";
import { TempDirs, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { paths, g, c, s } = cohortFixture();

/**
 * A file store whose write of `faults.failOn` (set later) fails with `code`, and whose rollback first runs
 * `faults.external`.
 */
function faultyStore(code: "ENOSPC" | "EIO") {
  const root = temps.make();
  const faults: { failOn?: string; external?: () => void } = {};
  const store = new FileBackend(root, {
    generation: "t",
    beforeWrite: (path) => {
      if (path === faults.failOn) throw Object.assign(new Error(`${code}: simulated write failure`), { code });
    },
    beforeRollback: () => faults.external?.(),
  });
  return { root, store, faults };
}

function backend() {
  return new FileBackend(temps.make(), { generation: "test" });
}

describe("file-only backend", () => {
  it("publishes a cohort atomically and loads it back byte-exactly", async () => {
    const store = backend();
    const empty = await store.loadCurrent(paths);
    expect([...empty.files.values()].every((v) => v === null)).toBe(true);
    const writes = new Map<string, Buffer | null>([
      [g.checkpoint, Buffer.from('{"g":1}\n')],
      [g.patches, Buffer.from("")],
      [s.checkpoint, Buffer.from([0xff, 0x00])],
      [s.patches, Buffer.from("{}\n")],
      [s.meta, Buffer.from('{"m":1}')],
    ]);
    const receipt = await store.publish({ basis: empty, writes });
    expect(receipt.committed).toBe(true);
    expect(receipt.changed).toHaveLength(5);
    const loaded = await store.loadCurrent(paths);
    expect(loaded.pointer).toEqual(receipt.pointer);
    for (const [path, bytes] of writes) expect(loaded.files.get(path)).toEqual(bytes);
    expect(await store.loadRevision(receipt.pointer, paths)).toMatchObject({ pointer: receipt.pointer });
    expect(readdirSync(store.root).filter((n) => n.includes(".tmp") || n === FILE_LOCK_NAME)).toEqual([]);
    // delete a member
    const again = await store.publish({ basis: loaded, writes: new Map([[s.meta, null]]) });
    expect((await store.loadCurrent(paths)).files.get(s.meta)).toBeNull();
    expect(again.changed).toEqual([s.meta]);
  });

  it("refuses a stale basis naming the file and scope that moved, writing nothing", async () => {
    const store = backend();
    const base = await store.loadCurrent(paths);
    await store.publish({
      basis: base,
      writes: new Map([
        [c.checkpoint, Buffer.from("1")],
        [c.patches, Buffer.from("")],
      ]),
    });
    // A second publisher still holding the old basis:
    const error = await store
      .publish({
        basis: base,
        writes: new Map([
          [s.checkpoint, Buffer.from("x")],
          [s.patches, Buffer.from("")],
        ]),
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "stale-basis", file: c.checkpoint });
    expect((error as Error).message).toContain(`cwd scope file ${c.checkpoint} moved`);
    expect((await store.loadCurrent(paths)).files.get(s.checkpoint)).toBeNull();
  });

  it("refuses while the publication lock is held and never steals it", async () => {
    const store = backend();
    const base = await store.loadCurrent(paths);
    const lock = await acquirePublicationLock(store.lockPath, { generation: "other" });
    await expect(store.publish({ basis: base, writes: new Map([[g.meta, Buffer.from("{}")]]) })).rejects.toMatchObject({
      code: "lock-held",
      message: expect.stringContaining(store.lockPath),
    });
    // Reads refuse too while another writer may be mid-publication (retryable, never a mixed cohort).
    await expect(store.loadCurrent(paths)).rejects.toMatchObject({ code: "lock-held" });
    await lock.release();
    expect((await store.loadCurrent(paths)).files.get(g.meta)).toBeNull();
    await store.publish({ basis: base, writes: new Map([[g.meta, Buffer.from("{}")]]) });
  });

  it("refuses writes outside the cohort and symlinked members", async () => {
    const store = backend();
    const base = await store.loadCurrent(paths);
    await expect(
      store.publish({ basis: base, writes: new Map([["other.json", Buffer.from("x")]]) }),
    ).rejects.toMatchObject({ code: "invalid-request" });
    const outside = join(temps.make(), "victim.json");
    writeFileSync(outside, "keep");
    symlinkSync(outside, join(store.root, "meta.json"));
    await expect(store.loadCurrent(paths)).rejects.toMatchObject({ code: "symlink-refused" });
    await expect(store.publish({ basis: base, writes: new Map([[g.meta, Buffer.from("x")]]) })).rejects.toMatchObject({
      code: "symlink-refused",
    });
    expect(readFileSync(outside, "utf8")).toBe("keep");
  });

  it("does not pass current files off as a replaced cohort", async () => {
    const store = backend();
    const base = await store.loadCurrent(paths);
    const first = await store.publish({ basis: base, writes: new Map([[s.meta, Buffer.from("1")]]) });
    await store.publish({ basis: await store.loadCurrent(paths), writes: new Map([[s.meta, Buffer.from("2")]]) });
    const error = await store.loadRevision(first.pointer, paths).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "pointer-unavailable" });
    expect((error as Error).message).toMatch(/this session's files no longer hold what it names/);
    await expect(store.loadRevision({ revision: "a".repeat(40) }, paths)).rejects.toMatchObject({
      code: "invalid-pointer",
    });
  });

  it("a pointer still resolves after another session changed the shared files, read as they are now", async () => {
    const store = backend();
    const mine = await store.publish({
      basis: await store.loadCurrent(paths),
      writes: new Map([
        [s.checkpoint, Buffer.from("A")],
        [s.meta, Buffer.from("A meta")],
        [c.checkpoint, Buffer.from("cwd by A")],
      ]),
    });
    // Another session (its own session files are not members of this cohort) patches cwd and global.
    const shared = new Map([
      [c.checkpoint, Buffer.from("cwd by B")],
      [c.patches, Buffer.from("{}\n")],
      [g.meta, Buffer.from("global by B")],
    ]);
    await store.publish({ basis: await store.loadCurrent(paths), writes: shared });
    const restored = await store.loadRevision(mine.pointer, paths);
    expect(restored.pointer).toEqual(mine.pointer);
    for (const [path, bytes] of shared) expect(restored.files.get(path)).toEqual(bytes);
    expect(restored.files.get(s.checkpoint)).toEqual(Buffer.from("A"));
    expect((await store.loadCurrent(paths)).pointer).toEqual(mine.pointer);
  });

  it("a pointer an older version recorded over every file loads while the whole cohort is unchanged", async () => {
    const store = backend();
    await store.publish({
      basis: await store.loadCurrent(paths),
      writes: new Map([
        [s.meta, Buffer.from("A meta")],
        [c.checkpoint, Buffer.from("cwd 1")],
      ]),
    });
    const legacy = legacyFilePointerOf((await store.loadCurrent(paths)).hashes);
    const loaded = await store.loadRevision(legacy, paths);
    expect(loaded.pointer, "the snapshot keeps the pointer the branch recorded").toEqual(legacy);
    // A publication on that snapshot is accepted (its basis pointer names its hashes' cohort, as v1).
    const next = await store.publish({ basis: loaded, writes: new Map([[s.meta, Buffer.from("A meta 2")]]) });
    expect(next.pointer).toEqual(filePointerOf(next.hashes));
    const again = await store.loadCurrent(paths);
    await expect(store.loadRevision(legacyFilePointerOf(again.hashes), paths)).resolves.toBeTruthy();
    await store.publish({ basis: again, writes: new Map([[c.checkpoint, Buffer.from("cwd 2")]]) });
    await expect(store.loadRevision(legacyFilePointerOf(again.hashes), paths)).rejects.toMatchObject({
      code: "pointer-unavailable",
    });
  });

  it("publishing after another session changed cwd works on a fresh basis; the old basis is stale", async () => {
    const store = backend();
    const first = await store.publish({
      basis: await store.loadCurrent(paths),
      writes: new Map([
        [s.meta, Buffer.from("A 1")],
        [c.checkpoint, Buffer.from("cwd by A")],
      ]),
    });
    const old = await store.loadCurrent(paths);
    await store.publish({ basis: old, writes: new Map([[c.checkpoint, Buffer.from("cwd by B")]]) });
    const fresh = await store.loadCurrent(paths);
    // The pointer does not cover cwd: both bases carry the same one; the per-file check tells them apart.
    expect(fresh.pointer).toEqual(first.pointer);
    expect(old.pointer).toEqual(first.pointer);
    const error = await store
      .publish({ basis: old, writes: new Map([[s.meta, Buffer.from("A 2")]]) })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "stale-basis", file: c.checkpoint });
    expect((await store.loadCurrent(paths)).files.get(s.meta)).toEqual(Buffer.from("A 1"));
    const receipt = await store.publish({ basis: fresh, writes: new Map([[s.meta, Buffer.from("A 2")]]) });
    expect(receipt.changed).toEqual([s.meta]);
    expect(receipt.pointer).not.toEqual(first.pointer);
    const current = await store.loadCurrent(paths);
    expect(current.files.get(c.checkpoint)).toEqual(Buffer.from("cwd by B"));
    expect(current.pointer).toEqual(receipt.pointer);
  });

  it("rolls back a failed multi-file write from the verified basis", async () => {
    const { store, faults } = faultyStore("ENOSPC");
    await store.publish({
      basis: await store.loadCurrent(paths),
      writes: new Map([
        [g.checkpoint, Buffer.from("old")],
        [g.patches, Buffer.from("")],
      ]),
    });
    const current = await store.loadCurrent(paths);
    faults.failOn = s.meta;
    await expect(
      store.publish({
        basis: current,
        writes: new Map([
          [g.checkpoint, Buffer.from("new")],
          [s.checkpoint, Buffer.from("s")],
          [s.patches, Buffer.from("")],
          [s.meta, Buffer.from("m")],
        ]),
      }),
    ).rejects.toThrow("ENOSPC");
    const after = await store.loadCurrent(paths);
    expect(after.pointer).toEqual(current.pointer); // nothing accepted was lost, nothing half-written remains
    expect(after.files.get(g.checkpoint)?.toString()).toBe("old");
    expect(after.files.get(s.checkpoint)).toBeNull();
    faults.failOn = undefined;
    await store.publish({ basis: after, writes: new Map([[g.meta, Buffer.from("ok")]]) }); // lock was released
  });

  it(
    "rolls back files already renamed into place when a " + "later step fails, restoring the exact basis bytes",
    async () => {
      const { root, store, faults } = faultyStore("EIO");
      await store.publish({
        basis: await store.loadCurrent(paths),
        writes: new Map([
          [g.checkpoint, Buffer.from("old")],
          [g.patches, Buffer.from("p")],
          [s.meta, Buffer.from("m0")],
        ]),
      });
      const basis = await store.loadCurrent(paths);
      faults.failOn = g.patches; // a deletion: it runs after the batch of puts was renamed into place
      const writes = new Map<string, Buffer | null>([
        [g.checkpoint, Buffer.from("new")],
        [s.checkpoint, Buffer.from("s")],
        [s.patches, Buffer.from("")],
        [s.meta, Buffer.from("m1")],
        [g.patches, null],
      ]);
      await expect(store.publish({ basis, writes })).rejects.toThrow("EIO");
      const after = await store.loadCurrent(paths);
      expect(after.pointer).toEqual(basis.pointer);
      expect(after.files).toEqual(basis.files);
      expect(readdirSync(root).filter((n) => n.includes(".tmp") || n === FILE_LOCK_NAME)).toEqual([]); // lock released
    },
  );

  it(
    "preserves bytes someone else wrote during a failed " +
      "publication instead of rolling them back, and keeps the lock",
    async () => {
      const { root, store, faults } = faultyStore("EIO");
      await store.publish({
        basis: await store.loadCurrent(paths),
        writes: new Map([
          [g.checkpoint, Buffer.from("old")],
          [g.patches, Buffer.from("p")],
          [s.meta, Buffer.from("m0")],
        ]),
      });
      const basis = await store.loadCurrent(paths);
      faults.failOn = g.patches;
      // not State Flow: it ignores the lock
      faults.external = () => writeFileSync(join(root, s.meta), "written by another tool");
      const error = await store
        .publish({
          basis,
          writes: new Map<string, Buffer | null>([
            [g.checkpoint, Buffer.from("new")],
            [s.meta, Buffer.from("m1")],
            [g.patches, null],
          ]),
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "rollback-conflict", file: s.meta });
      expect((error as Error).message).toMatch(/preserved those bytes instead of replacing them.*lock .* is kept/s);
      expect(readFileSync(join(root, s.meta), "utf8")).toBe("written by another tool"); // preserved
      expect(readFileSync(join(root, g.checkpoint), "utf8")).toBe("old"); // ours, restored
      expect(readFileSync(join(root, g.patches), "utf8")).toBe("p"); // never deleted
      // nothing builds on a mixed cohort
      await expect(store.loadCurrent(paths)).rejects.toMatchObject({ code: "lock-held" });
      // a member whose rollback target is absence (created by the failed publication) is removed only if still ours
      rmSync(join(root, FILE_LOCK_NAME));
      const second = await store.loadCurrent(paths);
      faults.external = () => undefined;
      await expect(
        store.publish({
          basis: second,
          writes: new Map<string, Buffer | null>([
            [s.checkpoint, Buffer.from("new s")],
            [s.patches, Buffer.from("")],
            [g.patches, null],
          ]),
        }),
      ).rejects.toThrow("EIO");
      expect(existsSync(join(root, s.checkpoint))).toBe(false);
      expect((await store.loadCurrent(paths)).files).toEqual(second.files);
    },
  );

  it("refuses a basis whose pointer does not match its hashes", async () => {
    const store = backend();
    const base = await store.loadCurrent(paths);
    await expect(
      store.publish({
        basis: { pointer: { revision: `file:${"0".repeat(64)}` }, hashes: base.hashes },
        writes: new Map(),
      }),
    ).rejects.toMatchObject({
      code: "invalid-pointer",
    });
  });
});
