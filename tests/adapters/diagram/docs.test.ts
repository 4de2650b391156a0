import { describe, expect, it } from "vitest";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  beginMarker,
  driftedPaths,
  embedDiagram,
  embedTable,
  endMarker,
  explainedNames,
  generatedDocs,
  invariantIds,
  MissingMarkerError,
  MissingTableMarkerError,
  tableBeginMarker,
  tableEndMarker,
  unmentionedIds,
  embedStates,
  statesBeginMarker,
  statesEndMarker,
  MissingStatesMarkerError,
} from "../../../adapters/diagram/docs.ts";
import { renderStateList } from "../../../adapters/diagram/state-list.ts";
import { renderMermaid } from "../../../adapters/diagram/mermaid.ts";
import { namedReferences, renderTransitionTable } from "../../../adapters/diagram/transition-table.ts";
import { machineCatalog } from "../../../machines/catalog.ts";

const root = join(import.meta.dirname, "..", "..", "..");
const doc = readFileSync(join(root, "docs", "state-machines.md"), "utf8");

function testSources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return testSources(p);
    return p.endsWith(".test.ts") ? [readFileSync(p, "utf8")] : [];
  });
}

const generate = (text: string) =>
  generatedDocs(
    text,
    machineCatalog.map(({ name, machine }) => ({
      name,
      mermaid: renderMermaid(machine),
      table: renderTransitionTable(machine),
      states: renderStateList(machine),
    })),
  );
const committed = (path: string) => readFileSync(join(root, path), "utf8");

describe("docs/state-machines.md", () => {
  it("every committed generated file is exactly what the machines generate (run npm run machines)", () => {
    const generated = generate(doc);
    expect(generated.size).toBe(machineCatalog.length + 1);
    for (const [path, text] of generated) {
      expect(committed(path) === text, `${path} is stale: run npm run machines`).toBe(true);
    }
    expect(driftedPaths(generated, committed)).toEqual([]);
  });

  it("negative control: a transition table edited by hand is reported as drifted", () => {
    const begin = doc.indexOf(tableBeginMarker("barrier"));
    const row = doc.indexOf("| `passThrough` | `TOOL_CALL` |", begin);
    expect(begin, "the barrier table is embedded").toBeGreaterThanOrEqual(0);
    expect(row, "the barrier table has its passThrough row").toBeGreaterThan(begin);
    const edited = doc.slice(0, row) + "| `idle` | `TOOL_CALL` | — | unchanged | — |\n" + doc.slice(row);
    const read = (path: string) => (path === "docs/state-machines.md" ? edited : committed(path));
    expect(driftedPaths(generate(edited), read)).toEqual(["docs/state-machines.md"]);
    expect(generate(edited).get("docs/state-machines.md")).toBe(doc);
  });

  it("has a section per catalogued machine, with its diagram and transition-table markers", () => {
    for (const { doc: id, name } of machineCatalog) {
      expect(doc).toMatch(new RegExp(`^## ${id} — `, "m"));
      expect(doc).toContain(beginMarker(name));
      expect(doc).toContain(tableBeginMarker(name));
    }
  });

  for (const { doc: id, name, machine } of machineCatalog) {
    it(`${id} explains each of ${name}'s named actions and guards exactly once, and nothing else`, () => {
      const { actions, guards } = namedReferences(machine);
      const explainedActions = explainedNames(doc, id, "What the actions do");
      const explainedGuards = explainedNames(doc, id, "What the guards test");
      expect([...explainedActions].sort(), `${id} "What the actions do" vs the machine`).toEqual([...actions].sort());
      expect([...explainedGuards].sort(), `${id} "What the guards test" vs the machine`).toEqual([...guards].sort());
    });
  }

  it("negative control: explainedNames reads only its section's list under its heading", () => {
    const d = [
      "## M1 — one",
      "",
      "**What the actions do**",
      "",
      "- `a`: does a",
      "- `b`: does b, explained",
      "  over two lines",
      "",
      "- `notInList`: after the list",
      "",
      "## M2 — two",
      "",
      "**What the actions do**",
      "",
      "- `c`: does c",
    ].join("\n");
    expect(explainedNames(d, "M1", "What the actions do")).toEqual(["a", "b"]);
    expect(explainedNames(d, "M2", "What the actions do")).toEqual(["c"]);
    expect(explainedNames(d, "M1", "What the guards test")).toEqual([]);
    expect(explainedNames(d, "M3", "What the actions do")).toEqual([]);
  });

  it("every invariant id in the doc is mentioned by at least one test name or assertion message", () => {
    const ids = invariantIds(doc);
    expect(ids.length).toBeGreaterThanOrEqual(20);
    const missing = unmentionedIds(ids, testSources(join(root, "tests", "machines")));
    expect(missing, `invariants without a test: ${missing.join(", ")}`).toEqual([]);
  });

  it("negative control: an id nobody tests is reported", () => {
    const ids = invariantIds("- I9.1 made up\n- I9.2 also\n");
    expect(unmentionedIds(ids, ['it("I9.1 covered")'])).toEqual(["I9.2"]);
    expect(unmentionedIds(["I1.1"], ["I1.10 only"]), "I1.10 must not count as I1.1").toEqual(["I1.1"]);
    expect(unmentionedIds(["I1.5"], ["I1.1–I1.10 hold"])).toEqual([]);
  });

  it("generatedDocs lists each diagram file and the doc with every diagram, table and state list embedded", () => {
    const d =
      `${statesBeginMarker("a")}\nold\n${statesEndMarker("a")}\n` +
      `${beginMarker("a")}\nold\n${endMarker("a")}\n\n${tableBeginMarker("a")}\nold\n${tableEndMarker("a")}`;
    const embedded = embedStates(embedTable(embedDiagram(d, "a", "new\n"), "a", "| T |\n"), "a", "- `s`: S\n");
    expect([...generatedDocs(d, [{ name: "a", mermaid: "new\n", table: "| T |\n", states: "- `s`: S\n" }])]).toEqual([
      ["docs/machines/a.mmd", "new\n"],
      ["docs/state-machines.md", embedded],
    ]);
  });

  it("embedStates puts the list between its markers; missing markers are a named error", () => {
    const d = `before\n${statesBeginMarker("x")}\nold\n${statesEndMarker("x")}\nafter`;
    const once = embedStates(d, "x", "- `a`: A\n");
    expect(once).toBe(`before\n${statesBeginMarker("x")}\n\n- \`a\`: A\n\n${statesEndMarker("x")}\nafter`);
    expect(embedStates(once, "x", "- `a`: A\n"), "embedding is idempotent").toBe(once);
    expect(() => embedStates("# nothing", "episode", "x")).toThrow(MissingStatesMarkerError);
  });

  it("embedTable puts the table between its markers as a block of its own; missing markers are a named error", () => {
    const d = `before\n${tableBeginMarker("x")}\nold\n${tableEndMarker("x")}\nafter`;
    const once = embedTable(d, "x", "| T |\n");
    expect(once).toBe(`before\n${tableBeginMarker("x")}\n\n| T |\n\n${tableEndMarker("x")}\nafter`);
    expect(embedTable(once, "x", "| T |\n"), "embedding is idempotent").toBe(once);
    expect(() => embedTable("# nothing", "episode", "x")).toThrow(MissingTableMarkerError);
    const diagramOnly = `${beginMarker("a")}\nold\n${endMarker("a")}`;
    const machines = [{ name: "a", mermaid: "m\n", table: "t\n", states: "s\n" }];
    expect(() => generatedDocs(diagramOnly, machines)).toThrow(/table markers.*"a"/);
  });

  it("embedDiagram fails with a named error when markers are missing", () => {
    expect(() => embedDiagram("# nothing", "episode", "x")).toThrow(MissingMarkerError);
    const d = `${beginMarker("x")}\nold\n${endMarker("x")}`;
    expect(embedDiagram(d, "x", "new\n")).toBe(`${beginMarker("x")}\n\`\`\`mermaid\nnew\n\`\`\`\n${endMarker("x")}`);
  });
});
