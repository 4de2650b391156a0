import { readFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MUTANTS, applyMutant, occurrences } from "../../scripts/mutate-machines.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

// Cheap guard for the mutant list of `npm run mutate:machines` (which is too slow for CI): a
// machine edit that moves a mutant's text must update the list, or the mutant silently stops
// applying. Running the mutants is the script's job, not this test's.
describe("mutate:machines mutant list", () => {
  it("names each mutant once, in a machine source, with a reason", () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(14);
    expect(new Set(MUTANTS.map((m) => m.id)).size).toBe(MUTANTS.length);
    for (const m of MUTANTS) {
      expect(m.file, m.id).toMatch(/^machines\/[a-z]+\.ts$/);
      expect(m.why.length, `${m.id} says why`).toBeGreaterThan(0);
    }
  });

  it.each(MUTANTS.map((m) => [m.id, m] as const))("%s: `from` occurs exactly once and `to` differs", (_id, m) => {
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
