// The source tree is layered and its imports point one way: storage/core (the pure temporal algebra)
// and machines import nothing of ours (besides themselves), the rest of storage builds on
// storage/core, the runtime on storage and machines, and
// the adapters on the runtime. The backends never import each other, and only the Pi adapter
// speaks to Pi. This test reads every source file's imports, so a shortcut fails here by name.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE_DIRS = ["machines", "storage", "runtime", "adapters"];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

interface Imports {
  local: string[];
  external: string[];
}

function importsOf(file: string): Imports {
  const text = readFileSync(join(ROOT, file), "utf8");
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^;]*?from\s+"([^"]+)"/g)].map((m) => m[1]!);
  specifiers.push(...[...text.matchAll(/import\("([^"]+)"\)/g)].map((m) => m[1]!));
  const local = specifiers.filter((s) => s.startsWith("."));
  return {
    local: local.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s))),
    external: specifiers.filter((s) => !s.startsWith(".")),
  };
}

/** The layer a file belongs to: its top folder, with storage's sub-folders told apart. */
function layerOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] === "storage" && parts.length > 2)
    return parts[2] === "plumbing" ? "storage/git/plumbing" : `storage/${parts[1]}`;
  if (parts[0] === "adapters") return `adapters/${parts[1]}`;
  return parts[0]!;
}

/** Which layers each layer may import (its own always included). */
const ALLOWED: Record<string, readonly string[]> = {
  "storage/core": [],
  machines: [],
  storage: ["storage/core", "storage/fs", "storage/file", "storage/git"],
  "storage/fs": ["storage", "storage/core"],
  "storage/file": ["storage", "storage/fs", "storage/core"],
  "storage/git": ["storage", "storage/fs", "storage/git/plumbing", "storage/core"],
  "storage/git/plumbing": ["storage", "storage/fs"],
  runtime: ["storage/core", "machines", "storage", "storage/fs"],
  "adapters/diagram": ["machines"],
  "adapters/inspect": ["runtime"],
  "adapters/pi": ["storage/core", "machines", "runtime", "storage", "adapters/inspect"],
};

/** External packages (and Node built-ins) each layer may use. */
const EXTERNAL: Record<string, RegExp> = {
  "storage/core": /^(valibot|node:crypto|node:path)$/,
  machines: /^xstate(\/graph)?$/,
  storage: /^node:/,
  "storage/fs": /^node:/,
  "storage/file": /^node:/,
  "storage/git": /^(node:.*|simple-git)$/,
  "storage/git/plumbing": /^node:/,
  runtime: /^(node:.*|xstate)$/,
  "adapters/diagram": /^(xstate|node:.*)$/,
  "adapters/inspect": /^(xstate|node:.*|@statelyai\/inspect)$/,
  "adapters/pi": /^(node:.*|xstate|valibot|@valibot\/to-json-schema|@earendil-works\/.*)$/,
};

const files = SOURCE_DIRS.flatMap(sourceFiles).sort();
const graph = new Map(files.map((file) => [file, importsOf(file)]));

function layerViolations(graph: ReadonlyMap<string, Imports>): string[] {
  const violations: string[] = [];
  for (const [file, { local }] of graph) {
    const layer = layerOf(file);
    const allowed = ALLOWED[layer];
    if (!allowed) {
      violations.push(`${file}: layer ${layer} has no rule`);
      continue;
    }
    for (const target of local) {
      const to = layerOf(target);
      if (to !== layer && !allowed.includes(to))
        violations.push(`${file} → ${target} (${layer} must not import ${to})`);
    }
  }
  return violations;
}

function externalViolations(graph: ReadonlyMap<string, Imports>): string[] {
  const violations: string[] = [];
  for (const [file, { external }] of graph) {
    const rule = EXTERNAL[layerOf(file)];
    for (const name of external) if (!rule?.test(name)) violations.push(`${file} imports ${name}`);
  }
  return violations;
}

describe("import graph", () => {
  it("finds the source tree", () => {
    expect(files.length).toBeGreaterThan(40);
    expect(files).toContain("storage/core/temporal.ts");
    expect(files).toContain("storage/git/plumbing/git-index.ts");
  });

  it("keeps every local import inside the layers its layer may use", () => {
    expect(layerViolations(graph)).toEqual([]);
  });

  it("keeps fs, git and Pi out of storage/core and machines, and Pi inside its adapter", () => {
    expect(externalViolations(graph)).toEqual([]);
  });

  it("has no import cycle", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const walk = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" → "));
        return;
      }
      state.set(file, "open");
      for (const target of graph.get(file)?.local ?? []) walk(target, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) walk(file, []);
    expect(cycles).toEqual([]);
  });

  it("names a shortcut (negative controls on a synthetic graph)", () => {
    const shortcut = new Map<string, Imports>([
      ["storage/git/git-backend.ts", { local: ["storage/file/file-backend.ts"], external: [] }],
      ["machines/episode.ts", { local: ["storage/core/temporal.ts"], external: ["node:fs"] }],
      ["storage/core/temporal.ts", { local: [], external: ["@earendil-works/pi-coding-agent"] }],
    ]);
    expect(layerViolations(shortcut)).toEqual([
      "storage/git/git-backend.ts → storage/file/file-backend.ts (storage/git must not import storage/file)",
      "machines/episode.ts → storage/core/temporal.ts (machines must not import storage/core)",
    ]);
    expect(externalViolations(shortcut)).toEqual([
      "machines/episode.ts imports node:fs",
      "storage/core/temporal.ts imports @earendil-works/pi-coding-agent",
    ]);
  });
});
