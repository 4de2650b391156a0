import { existsSync, readFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_SUITE, suiteOf } from "../../scripts/mutant.ts";
import { ALL_MUTANTS, MUTANTS, RUNTIME_MUTANTS, applyMutant, occurrences } from "../../scripts/mutate-machines.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

// Cheap guard for the mutant lists of `npm run mutate:machines` (which is too slow for CI): an
// edit that moves a mutant's text must update the list, or the mutant silently stops applying, and
// a mutant's suite must exist, or it runs nothing. Running the mutants is the script's job, not
// this test's.
describe("mutate:machines mutant list", () => {
  it("names each mutant once, in a machine source, with a reason, owned by the machine suites", () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(14);
    expect(new Set(ALL_MUTANTS.map((m) => m.id)).size).toBe(ALL_MUTANTS.length);
    for (const m of MUTANTS) {
      expect(m.file, m.id).toMatch(/^machines\/[a-z-]+\.ts$/);
      expect(m.why.length, `${m.id} says why`).toBeGreaterThan(0);
      expect(suiteOf(m), m.id).toEqual(DEFAULT_SUITE);
    }
  });

  it("holds at least 45 mutants, 15 of them on the runtime/effect side, each naming the suite that owns it", () => {
    expect(ALL_MUTANTS.length).toBeGreaterThanOrEqual(45);
    expect(ALL_MUTANTS).toEqual([...MUTANTS, ...RUNTIME_MUTANTS]);
    expect(RUNTIME_MUTANTS.length).toBeGreaterThanOrEqual(15);
    for (const m of RUNTIME_MUTANTS) {
      expect(m.file, m.id).toMatch(/^(runtime|storage)\/[a-z/-]+\.ts$/);
      expect(m.why.length, `${m.id} says why`).toBeGreaterThan(0);
      expect(m.suite?.length, `${m.id} names its suite`).toBeGreaterThan(0);
      for (const path of m.suite ?? []) {
        expect(path, m.id).toMatch(/^tests\//);
        expect(existsSync(join(repo, path)), `${m.id}: ${path} exists`).toBe(true);
      }
    }
  });

  it.each(ALL_MUTANTS.map((m) => [m.id, m] as const))("%s: `from` occurs exactly once and `to` differs", (_id, m) => {
    const source = readFileSync(join(repo, m.file), "utf8");
    expect(occurrences(source, m.from), `${m.id} in ${m.file}`).toBe(1);
    expect(m.to).not.toBe(m.from);
    const mutated = applyMutant(source, m);
    expect(mutated).not.toBe(source);
    expect(mutated.length).toBe(source.length - m.from.length + m.to.length);
    // A mutant that does not parse fails every test without testing any invariant.
    expect(() => stripTypeScriptTypes(mutated), `${m.id} still parses`).not.toThrow();
  });

  it("applyMutant refuses a replacement that is missing or ambiguous", () => {
    const m = { id: "x", file: "machines/x.ts", from: "a", to: "b", why: "test" };
    expect(() => applyMutant("ccc", m)).toThrow(/occurs 0 times/);
    expect(() => applyMutant("aa", m)).toThrow(/occurs 2 times/);
    expect(applyMutant("cac", m)).toBe("cbc");
    expect(() => applyMutant("a", { ...m, to: "a" })).toThrow(/equals/);
  });

  it("covers the mutations the generated suites once missed", () => {
    const ids = MUTANTS.map((m) => m.id);
    for (const id of [
      "resolution-three-steers",
      "episode-passive-tree-no-refreeze",
      "episode-retain-revision-noop",
      "episode-from-off-skips-bootstrap",
    ])
      expect(ids).toContain(id);
  });
});
