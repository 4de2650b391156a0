import { describe, expect, it } from "vitest";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { embedDiagram, generatedDocs, invariantIds, unmentionedIds, MissingMarkerError, beginMarker, endMarker } from "../../../adapters/diagram/docs.ts";
import { renderMermaid } from "../../../adapters/diagram/mermaid.ts";
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

describe("docs/state-machines.md", () => {
  it("every committed generated file is exactly what the machines generate (run npm run machines)", () => {
    const generated = generatedDocs(doc, machineCatalog.map(({ name, machine }) => ({ name, mermaid: renderMermaid(machine) })));
    expect(generated.size).toBe(machineCatalog.length + 1);
    for (const [path, text] of generated) expect(readFileSync(join(root, path), "utf8") === text, `${path} is stale: run npm run machines`).toBe(true);
  });

  it("has a section per catalogued machine", () => {
    for (const { doc: id, name } of machineCatalog) {
      expect(doc).toMatch(new RegExp(`^## ${id} — `, "m"));
      expect(doc).toContain(beginMarker(name));
    }
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

  it("generatedDocs lists each diagram file and the doc with every diagram embedded", () => {
    const d = `${beginMarker("a")}\nold\n${endMarker("a")}`;
    expect([...generatedDocs(d, [{ name: "a", mermaid: "new\n" }])]).toEqual([
      ["docs/machines/a.mmd", "new\n"],
      ["docs/state-machines.md", embedDiagram(d, "a", "new\n")],
    ]);
  });

  it("embedDiagram fails with a named error when markers are missing", () => {
    expect(() => embedDiagram("# nothing", "episode", "x")).toThrow(MissingMarkerError);
    const d = `${beginMarker("x")}\nold\n${endMarker("x")}`;
    expect(embedDiagram(d, "x", "new\n")).toBe(`${beginMarker("x")}\n\`\`\`mermaid\nnew\n\`\`\`\n${endMarker("x")}`);
  });
});
