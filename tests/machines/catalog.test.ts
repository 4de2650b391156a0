import { describe, expect, it } from "vitest";
import { machineCatalog } from "../../machines/catalog.ts";

describe("machine catalog", () => {
  it("lists each machine once with its module and a doc section id", () => {
    expect(machineCatalog.map((m) => m.name)).toEqual([
      "episode",
      "resolution",
      "publication",
      "barrier",
      "run",
      "sync",
    ]);
    expect(new Set(machineCatalog.map((m) => m.doc)).size).toBe(machineCatalog.length);
    for (const m of machineCatalog) expect(m.machine.id).toBe(m.name);
  });

  it("machine configs are plain JSON (Stately-friendly: named guards/actions, only data mappings as code)", () => {
    for (const { machine } of machineCatalog) {
      const config = machine.config as unknown;
      const walk = (v: unknown, path: string): void => {
        // (data mappings are the one exception: an invoked actor's input and the machine's output, read from context)
        const mapping = /\.invoke\.input$/.test(path) || path === `${machine.id}.output`;
        if (typeof v === "function" && !mapping) throw new Error(`${machine.id}: function at ${path}`);
        if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
      };
      // context may be an input factory, an invoke's input a mapper; everything else must be data
      const { context: _c, ...rest } = config as Record<string, unknown>;
      expect(() => walk(rest, machine.id)).not.toThrow();
      expect(() => JSON.stringify(rest)).not.toThrow();
    }
  });
});
