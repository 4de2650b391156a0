import { describe, expect, it } from "vitest";
import { mergeIndexEntries, restageEntries, sameEntries, storeFilesAdded } from "../../../storage/git/index-merge.ts";
import type { IndexEntry } from "../../../storage/git/plumbing/git-index.ts";

const STAT = Buffer.alloc(40, 1);
const entry = (path: string, oid: string, mode = 0o100644): IndexEntry => ({
  path,
  stat: STAT,
  mode,
  oid: oid.repeat(40).slice(0, 40),
  assumeValid: false,
});

describe("mergeIndexEntries", () => {
  const seed = [entry("checkpoint.json", "a"), entry("notes.md", "b")];

  it("keeps what the user staged meanwhile and lays this publication's changes over it", () => {
    const mine = [entry("checkpoint.json", "c"), entry("notes.md", "b")];
    const theirs = [entry("checkpoint.json", "a"), entry("notes.md", "d"), entry("todo.md", "e")];
    expect(mergeIndexEntries(seed, mine, theirs)).toEqual([
      entry("checkpoint.json", "c"),
      entry("notes.md", "d"),
      entry("todo.md", "e"),
    ]);
  });

  it("a path both changed: a store file keeps State Flow's blob, the user's file keeps the user's entry", () => {
    const mine = [entry("checkpoint.json", "c"), entry("notes.md", "f")];
    const theirs = [entry("checkpoint.json", "9"), entry("notes.md", "d")];
    expect(mergeIndexEntries(seed, mine, theirs)).toEqual([entry("checkpoint.json", "c"), entry("notes.md", "d")]);
  });

  it("a deletion by this publication removes the entry unless the user restaged it", () => {
    expect(mergeIndexEntries(seed, [entry("notes.md", "b")], seed)).toEqual([entry("notes.md", "b")]);
    expect(sameEntries(seed, [...seed])).toBe(true);
    expect(sameEntries(seed, [entry("checkpoint.json", "a")])).toBe(false);
  });
});

describe("storeFilesAdded", () => {
  it("reads git add -v's lines and keeps only the layout's scope files", () => {
    const out = "add 'checkpoint.json'\nadd '--p--/s/config.json'\nadd 'notes.md'\nremove 'meta.json'\n";
    expect(storeFilesAdded(out)).toEqual(["checkpoint.json", "--p--/s/config.json"]);
  });
});

describe("restageEntries", () => {
  it("replaces restaged store files by their exact blob as 100644, keeps stat data, adds new ones", () => {
    const staged = [entry("checkpoint.json", "a", 0o100755), entry("notes.md", "b")];
    const blob = "c".repeat(40);
    const { kept, added } = restageEntries(
      staged,
      new Map([
        ["checkpoint.json", blob],
        ["meta.json", "d".repeat(40)],
      ]),
    );
    expect(kept).toEqual([{ ...entry("checkpoint.json", "c"), mode: 0o100644 }, entry("notes.md", "b")]);
    expect([...added]).toEqual([["meta.json", "d".repeat(40)]]);
    expect(restageEntries(staged, new Map([["checkpoint.json", null]])).kept).toEqual([entry("notes.md", "b")]);
  });
});
