import { describe, expect, it } from "vitest";
import { ENTRY_BYTES, NOTE_CHARS, gitCommand, nativeStateFile, runScript, seedState } from "../../bench/e2e-fixture.ts";

describe("bench fixture", () => {
  it("seeds half the state as facts and half as notes, each entry 250 bytes of JSON", () => {
    const seed = seedState(8);
    expect(seed.count).toBe(16);
    const entry = JSON.stringify({ n000: seed.notes.n000 }).slice(1, -1) + ",";
    expect(entry.length).toBe(ENTRY_BYTES);
    expect(seed.notes.n015).toHaveLength(NOTE_CHARS);
    expect(Buffer.byteLength(JSON.stringify({ facts: seed.facts, notes: seed.notes }))).toBeLessThanOrEqual(8 * 1024);
    expect(seedState(0.1).count).toBe(1);
    expect(nativeStateFile(seed).split("\n")).toHaveLength(1 + 32 + 1);
  });

  it("scripts one run of each workload", () => {
    const seed = seedState(1);
    const notes = Object.values(seed.notes);
    const bench = runScript("bench", "native", 3, seed, notes);
    expect(bench.calls.map((c) => c.name)).toEqual(["read", "edit"]);
    expect(bench.calls[0]!.args).toEqual({ path: "data/input-3.txt" });
    expect(bench.note).toMatchObject({ k: 0, key: "n000" });
    const edit = bench.calls[1]!.args as { edits: { oldText: string; newText: string }[] };
    expect(edit.edits[0]!.oldText).toBe(`- n000: ${notes[0]}`);
    const heavy = runScript("heavy", "file", 4, seed, notes);
    expect(heavy.calls.map((c) => c.name)).toEqual([...Array(10).fill("read"), "patch_state"]);
    expect(heavy.note!.key).toBe("n001");
    expect(runScript("qa", "native", 5, seed, notes).calls).toEqual([]);
    const qa = runScript("qa", "file", 5, seed, notes);
    expect(qa.calls).toEqual([{ name: "patch_state", args: { final: true } }]);
    expect(qa.note).toBeUndefined();
    expect(qa.answer).toMatch(/^Answer 5:/);
  });

  it("names a git command without its long arguments", () => {
    expect(gitCommand("-c core.quotepath=off add -A -- x")).toBe("add -A");
    expect(gitCommand("cat-file --batch-check")).toBe("cat-file --batch-check");
    expect(gitCommand("config -z --get-regexp=x")).toBe("config -z");
    expect(gitCommand("rev-parse HEAD")).toBe("rev-parse");
  });
});
