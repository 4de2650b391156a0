// The person's view of a state and of a difference: trees with counts and sizes, long values
// folded with the exact command that shows them whole, dotted paths that resolve keys holding dots.
import { describe, expect, it } from "vitest";
import {
  INLINE_LIMIT,
  MAX_MEMBERS,
  diffLines,
  diffValues,
  inlineValue,
  lookupPath,
  stateTree,
  twoLevelSummary,
  wholeValue,
} from "../../runtime/state-views.ts";

const hint = (path: string) => `/state-flow-show session 0 ${path}`;

describe("state tree", () => {
  it("lists each top-level field with its count and size, short values inline", () => {
    const lines = stateTree({ contract: { db: "sqlite", n: 2 }, working: {}, response: "done" }, hint);
    expect(lines).toEqual([
      "contract — 2 keys, 21 chars",
      '  db: "sqlite"',
      "  n: 2",
      "working — 0 keys, 2 chars",
      "response — 4 chars",
      '  "done"',
    ]);
  });

  it("folds a long string with its size and a hint naming its path", () => {
    const long = "x".repeat(1_234);
    const [, line] = stateTree({ working: { plan: long } }, hint);
    expect(line).toBe(
      `  plan: "${"x".repeat(80)}"… 1,234 chars — /state-flow-show session 0 working.plan shows it whole`,
    );
  });

  it("opens objects to a depth, then folds them; long lists count what they leave out", () => {
    const deep = { a: { b: { c: { d: "y".repeat(INLINE_LIMIT) } } } };
    const lines = stateTree({ working: deep }, hint);
    expect(lines.at(-1)).toMatch(
      /^ {6}c: \{1 key\} … 2\d\d chars — \/state-flow-show session 0 working\.a\.b\.c shows/,
    );
    const many = Object.fromEntries(Array.from({ length: MAX_MEMBERS + 5 }, (_, i) => [`k${i}`, "v".repeat(10)]));
    expect(stateTree({ working: many }, hint).at(-1)).toBe(
      "  … 5 more — /state-flow-show session 0 working shows them all",
    );
  });

  it("shows array items by index, and a short value whole as JSON", () => {
    expect(inlineValue([1, 2], ["working", "list"], hint)).toBe("[1,2]");
    const items = Array.from({ length: 30 }, (_, i) => `item number ${i}`);
    const lines = stateTree({ working: { items } }, hint);
    expect(lines[1]).toMatch(/^ {2}items: \[30 items, \d+ chars\]$/);
    expect(lines[2]).toBe('    [0]: "item number 0"');
    expect(wholeValue({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(wholeValue("prose\nas text")).toBe("prose\nas text");
  });
});

describe("dotted paths", () => {
  it("resolve keys that hold dots (artifact source paths), the longest first", () => {
    const state = { artifacts: { "/k/a.md": { body: "B" }, "/k/a": { body: "other" } } };
    expect(lookupPath(state, "artifacts./k/a.md.body")).toEqual({
      found: true,
      value: "B",
      path: ["artifacts", "/k/a.md", "body"],
    });
    expect(lookupPath({ working: { list: [5, 6] } }, "working.list.1")).toMatchObject({ found: true, value: 6 });
  });

  it("say how far a missing path got and what is there", () => {
    expect(lookupPath({ working: { plan: 1, notes: 2 } }, "working.nope")).toEqual({
      found: false,
      at: ["working"],
      available: ["plan", "notes"],
    });
  });
});

describe("structural difference", () => {
  it("finds added, changed and removed paths; key order and equal arrays are no difference", () => {
    const before = { contract: { db: "sqlite", keep: [1, 2] }, working: { old: 1, nest: { a: 1 } } };
    const after = { working: { nest: { a: 2, b: 3 } }, contract: { keep: [1, 2], db: "pg" } };
    const entries = diffValues(before, after);
    expect(entries).toEqual([
      { kind: "changed", path: ["contract", "db"], before: "sqlite", after: "pg" },
      { kind: "removed", path: ["working", "old"], before: 1 },
      { kind: "changed", path: ["working", "nest", "a"], before: 1, after: 2 },
      { kind: "added", path: ["working", "nest", "b"], after: 3 },
    ]);
    // Two levels deep: a change below working.nest is a change of working.nest.
    expect(twoLevelSummary(entries)).toEqual({
      added: [],
      changed: ["contract.db", "working.nest"],
      removed: ["working.old"],
    });
  });

  it("renders groups, folding long values with the hint of the side they come from", () => {
    const entries = diffValues({ working: { plan: "a".repeat(300) } }, { working: { plan: "b".repeat(300), n: 1 } });
    const lines = diffLines(
      entries,
      (p) => `/state-flow-show cwd 3 ${p}`,
      (p) => `/state-flow-show cwd 0 ${p}`,
    );
    expect(lines[0]).toBe("added (1):");
    expect(lines[1]).toBe("  + working.n: 1");
    expect(lines[3]).toBe("  ~ working.plan:");
    expect(lines[4]).toContain("300 chars — /state-flow-show cwd 3 working.plan shows it whole");
    expect(lines[5]).toContain("300 chars — /state-flow-show cwd 0 working.plan shows it whole");
    expect(diffLines([], hint, hint)).toEqual(["no difference: both boundaries hold the same state in this scope"]);
  });
});
