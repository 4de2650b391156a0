import { describe, expect, it } from "vitest";
import {
  filePointerOf,
  isFilePointer,
  legacyFilePointerOf,
  loadIfCurrent,
  provesFileCohort,
  sameBytes,
  sameFiles,
  sameHashes,
  splitWrites,
} from "../../storage/cohort-basis.ts";
import { sha256Hex } from "../../storage/fs/fs-safe.ts";
import type { CohortSnapshot } from "../../storage/backend.ts";
import { cohortFixture } from "../support/store-fixtures.ts";

const { paths, g, c, s } = cohortFixture();
const sessionMembers = [s.checkpoint, s.patches, s.config!, s.meta];

/** A complete cohort's hashes: every member present (its own path as content) except the cwd meta. */
function cohortHashes(): Map<string, string | null> {
  return new Map(paths.map((p) => [p, p === c.meta ? null : sha256Hex(p)]));
}

function snapshot(hashes: ReadonlyMap<string, string | null>, pointer = filePointerOf(hashes)): CohortSnapshot {
  return { pointer, hashes, files: new Map([...hashes.keys()].map((p) => [p, null])) };
}

describe("cohort basis", () => {
  it("a file pointer (v2) hashes the canonical listing of the session scope's members under its own header", () => {
    const hashes = cohortHashes();
    hashes.set(s.config!, null);
    const lines = [...sessionMembers].sort().map((p) => `${hashes.get(p) ?? "-"} ${p}\n`);
    const listing = `state-flow file cohort v2 (session scope)\n${lines.join("")}`;
    const pointer = filePointerOf(hashes);
    expect(pointer.revision).toBe(`file:${sha256Hex(listing)}`);
    expect(isFilePointer(pointer)).toBe(true);
    expect(isFilePointer({ revision: "file:ABC" })).toBe(false);
    expect(filePointerOf(new Map([...hashes].reverse())), "member order does not matter").toEqual(pointer);
    // The legacy pointer lists every member under the v1 header: the two can never be equal.
    const all = [...paths].sort().map((p) => `${hashes.get(p) ?? "-"} ${p}\n`);
    expect(legacyFilePointerOf(hashes).revision).toBe(
      `file:${sha256Hex(`state-flow file cohort v1\n${all.join("")}`)}`,
    );
    expect(legacyFilePointerOf(hashes)).not.toEqual(pointer);
  });

  it("a file pointer stays when only shared files change and moves with any session member", () => {
    const hashes = cohortHashes();
    const pointer = filePointerOf(hashes);
    const shared = new Map(hashes);
    for (const path of [g.checkpoint, g.patches, g.meta, c.checkpoint, c.patches]) shared.set(path, sha256Hex("B"));
    shared.set(c.meta, sha256Hex("B's cwd meta"));
    expect(filePointerOf(shared)).toEqual(pointer);
    for (const path of sessionMembers) {
      expect(filePointerOf(new Map(hashes).set(path, sha256Hex("changed"))), path).not.toEqual(pointer);
      expect(filePointerOf(new Map(hashes).set(path, null)), `${path} removed`).not.toEqual(pointer);
    }
    // Another session's files name another pointer, even with identical bytes.
    const other = cohortFixture();
    const otherHashes = new Map(other.paths.map((p) => [p, p === other.c.meta ? null : sha256Hex(p)]));
    const renamed = new Map([...otherHashes].map(([p, h]) => [p.replace(other.keys.sessionKey, "other-session"), h]));
    expect(filePointerOf(renamed)).not.toEqual(pointer);
  });

  it("a pointer proves its cohort as v2 (session files) or, recorded by an older version, as v1 (all files)", () => {
    const hashes = cohortHashes();
    const v2 = filePointerOf(hashes);
    const v1 = legacyFilePointerOf(hashes);
    expect(provesFileCohort(v2, hashes)).toBe(true);
    expect(provesFileCohort(v1, hashes)).toBe(true);
    const cwdMoved = new Map(hashes).set(c.checkpoint, sha256Hex("B"));
    expect(provesFileCohort(v2, cwdMoved)).toBe(true);
    expect(provesFileCohort(v1, cwdMoved), "a v1 pointer still holds the shared files against the cohort").toBe(false);
    const sessionMoved = new Map(hashes).set(s.meta, sha256Hex("next"));
    expect(provesFileCohort(v2, sessionMoved)).toBe(false);
    expect(provesFileCohort(v1, sessionMoved)).toBe(false);
    expect(provesFileCohort({ revision: "a".repeat(40) }, hashes)).toBe(false);
    expect(provesFileCohort({ revision: `file:${"0".repeat(64)}` }, hashes)).toBe(false);
  });

  it("loadIfCurrent reads shared files as they are, keeps the recorded pointer, refuses replaced session files", () => {
    const recorded = cohortHashes();
    const v2 = filePointerOf(recorded);
    const v1 = legacyFilePointerOf(recorded);
    const cwdMoved = new Map(recorded).set(c.patches, sha256Hex("B"));
    const loaded = loadIfCurrent(v2, snapshot(cwdMoved));
    expect(loaded.pointer).toEqual(v2);
    expect(loaded.hashes.get(c.patches)).toBe(sha256Hex("B"));
    expect(loadIfCurrent(v1, snapshot(recorded)).pointer, "the recorded v1 pointer, not its v2 name").toEqual(v1);
    const git = { revision: "b".repeat(40) };
    expect(loadIfCurrent(v2, snapshot(cwdMoved, git)).pointer, "a commit holding the files names them").toEqual(git);
    expect(() => loadIfCurrent(v1, snapshot(cwdMoved))).toThrow(
      expect.objectContaining({ code: "pointer-unavailable" }),
    );
    const replaced = new Map(recorded).set(s.checkpoint, sha256Hex("next"));
    let error: unknown;
    try {
      loadIfCurrent(v2, snapshot(replaced));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "pointer-unavailable" });
    expect((error as Error).message).toContain(`this session's files no longer hold what it names`);
    expect((error as Error).message).toContain(`(they now form ${filePointerOf(replaced).revision};`);
    expect((error as Error).message).toMatch(/File-only stores keep no history.*choose a newer checkpoint/);
  });

  it("orders writes: data files, then config, then meta (session last within each group)", () => {
    const writes = new Map([s.meta, g.meta, s.config!, c.patches, g.checkpoint].map((p) => [p, Buffer.from("x")]));
    const order = splitWrites(writes).puts.map(([path]) => path);
    expect(order).toEqual([g.checkpoint, c.patches, s.config, g.meta, s.meta]);
  });
});

describe("comparing cohort reads", () => {
  const b = (text: string) => Buffer.from(text);

  it("bytes are the same only with equal content or both absent", () => {
    expect(sameBytes(b("a"), b("a"))).toBe(true);
    expect(sameBytes(null, null)).toBe(true);
    expect(sameBytes(b(""), null)).toBe(false);
    expect(sameBytes(null, b("a"))).toBe(false);
    expect(sameBytes(b("a"), b("b"))).toBe(false);
    expect(sameBytes(new Uint8Array([97]), b("a"))).toBe(true);
  });

  it("two reads are the same only with the same members, each with the same bytes or absent in both", () => {
    const read = new Map([
      ["x", b("1")],
      ["y", null],
    ]);
    expect(sameFiles(read, new Map(read))).toBe(true);
    expect(sameFiles(read, new Map([["x", b("1")]]))).toBe(false);
    expect(
      sameFiles(
        read,
        new Map([
          ["x", b("1")],
          ["z", null],
        ]),
      ),
    ).toBe(false);
    expect(
      sameFiles(
        read,
        new Map([
          ["x", b("2")],
          ["y", null],
        ]),
      ),
    ).toBe(false);
    expect(
      sameFiles(
        read,
        new Map([
          ["x", b("1")],
          ["y", b("")],
        ]),
      ),
    ).toBe(false);
  });

  it("two bases are the same only with the same members and hashes (absent is not missing)", () => {
    const basis = new Map<string, string | null>([
      ["x", "h1"],
      ["y", null],
    ]);
    expect(sameHashes(basis, new Map(basis))).toBe(true);
    expect(
      sameHashes(
        basis,
        new Map([
          ["x", "h1"],
          ["z", null],
        ]),
      ),
    ).toBe(false);
    expect(
      sameHashes(
        basis,
        new Map([
          ["x", "h2"],
          ["y", null],
        ]),
      ),
    ).toBe(false);
  });
});
