// KnowledgeRun over a real Knowledge root and a real file-only store's runtime: what a run's plan
// says before and after discovery, what a read obliges, and which provenance it then owes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { sourceHash } from "../../runtime/knowledge-discovery.ts";
import { KnowledgeRun } from "../../runtime/knowledge-run.ts";
import { cwdKey } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore } from "../../storage/state-store.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function world() {
  const home = mkdtempSync(join(tmpdir(), "sf-knowledge-run-"));
  dirs.push(home);
  const root = join(home, "knowledge");
  mkdirSync(root);
  writeFileSync(join(root, "a.md"), "A");
  const cwd = join(home, "project");
  mkdirSync(cwd);
  const identity = { cwd, cwdKey: cwdKey(cwd), sessionId: "s-1", sessionKey: "2026-01-01T00-00-00-000Z_s-1" };
  const store = new StateStore(await openStore({ root: join(home, "store"), env: { PATH: home } }), identity);
  const runtime = await store.start(null, "turn-end");
  return { root, runtime, store, source: join(root, "a.md"), meta: join(home, "store", "meta.json") };
}

describe("KnowledgeRun", () => {
  it("says unavailable until discovery completes, then plans", async () => {
    const { root, runtime, source } = await world();
    const run = new KnowledgeRun(root, null);
    expect(run.invalidations(runtime)).toEqual({ unavailable: "Knowledge discovery has not completed for this run" });
    await run.ready();
    expect(run.invalidations(runtime)).toEqual([{ path: source, reason: "new" }]);
  });

  it("a read of a planned source obliges its compilation and owes its provenance; others oblige nothing", async () => {
    const { root, runtime, source } = await world();
    const run = new KnowledgeRun(root, null);
    await run.ready();
    run.sourceRead(runtime, join(root, "other.md"));
    const nothing = parsePatchSet({ final: true });
    expect(run.owed(new Date(0), nothing)).toBeUndefined();
    run.sourceRead(runtime, source);
    expect(run.unmet(parsePatchSet({ final: true })).map((o) => o.path)).toEqual([source]);
    const compiled = parsePatchSet({ global: { artifacts: { [source]: { description: "A" } } } });
    expect(run.unmet(compiled)).toEqual([]);
    expect(run.owed(new Date(0), compiled)).toEqual({
      global: {
        [source]: {
          sourceHash: expect.stringMatching(/^sha256:/),
          compilerRevision: "artifact-v1",
          compiledAt: "1970-01-01T00:00:00.000Z",
        },
      },
    });
    run.compiled([source]);
    expect(run.owed(new Date(0), compiled)).toBeUndefined();
  });

  it("a discovery that fails is unavailable with its reason, never an empty plan", async () => {
    const { runtime } = await world();
    const home = mkdtempSync(join(tmpdir(), "sf-knowledge-run-"));
    dirs.push(home);
    const { symlinkSync } = await import("node:fs");
    symlinkSync(join(home, "loop"), join(home, "loop")); // realpath: ELOOP
    const run = new KnowledgeRun(join(home, "loop"), null);
    await run.ready();
    expect(run.invalidations(runtime)).toEqual({ unavailable: expect.stringMatching(/^discovery failed: .*ELOOP/) });
  });

  it("a refresh asked for lists a compiled source as refresh until a compilation settles it", async () => {
    const w = await world();
    const { root, source } = w;
    const artifact = parsePatchSet({ global: { artifacts: { [source]: { description: "A" } } } }).patches;
    const compiled = await compile(w, artifact, [source], new Date());
    const unasked = new KnowledgeRun(root, w.meta);
    await unasked.ready();
    expect(unasked.invalidations(compiled), "fresh and not asked for: nothing to read").toEqual([]);
    const refresh = new Set([source]);
    const run = new KnowledgeRun(root, w.meta, refresh);
    await run.ready();
    expect(run.invalidations(compiled)).toEqual([{ path: source, reason: "refresh" }]);
    run.sourceRead(compiled, source);
    expect(run.unmet(parsePatchSet({ final: true })).map((o) => [o.path, o.reason])).toEqual([[source, "refresh"]]);
    run.compiled([source]);
    expect(refresh.size, "the request is settled").toBe(0);
    expect(run.invalidations(compiled)).toEqual([]);
  });

  it("maintenance selects one old artifact per run, and a read of it obliges its recompilation", async () => {
    const w = await world();
    const { root, source } = w;
    writeFileSync(join(root, "b.md"), "B");
    const b = join(root, "b.md");
    const artifacts = parsePatchSet({
      global: { artifacts: { [source]: { description: "A" }, [b]: { description: "B" } } },
    }).patches;
    const old = await compile(w, artifacts, [source, b]); // compiled in 1970: old
    const run = new KnowledgeRun(root, w.meta);
    await run.ready();
    expect(run.invalidations(old)).toEqual([{ path: source, reason: "maintenance" }]);
    expect(run.maintenance(old).deferred.map((c) => c.path)).toEqual([b]);
    run.sourceRead(old, source);
    expect(run.unmet(parsePatchSet({ final: true })).map((o) => [o.path, o.reason])).toEqual([[source, "maintenance"]]);
    run.compiled([source]);
    expect(run.invalidations(old), "one selection per run: b waits for the next").toEqual([]);
    const next = new KnowledgeRun(root, w.meta);
    await next.ready();
    expect(next.invalidations(old), "a new run selects again (a's provenance is still old here)").toEqual([
      { path: source, reason: "maintenance" },
    ]);
  });

  it("an unlisted read obliges nothing; patching its artifact in the run records the model's refresh", async () => {
    const w = await world();
    const { root, source } = w;
    const artifact = parsePatchSet({ global: { artifacts: { [source]: { description: "A" } } } }).patches;
    const fresh = await compile(w, artifact, [source], new Date());
    const run = new KnowledgeRun(root, w.meta);
    await run.ready();
    expect(run.invalidations(fresh)).toEqual([]);
    run.sourceRead(fresh, source);
    const other = parsePatchSet({ session: { working: { x: 1 } } });
    expect(run.unmet(other)).toEqual([]);
    expect(run.owed(new Date(0), other)).toBeUndefined();
    const recompiled = parsePatchSet({ global: { artifacts: { [source]: { description: "A, better" } } } });
    expect(run.owed(new Date(0), recompiled)?.global?.[source]?.compiledAt).toBe("1970-01-01T00:00:00.000Z");
  });
});

/** Commits `patches` with provenance for `paths`, compiled at `at` (default: the epoch, i.e. old). */
async function compile(
  { store, runtime }: Awaited<ReturnType<typeof world>>,
  patches: ReturnType<typeof parsePatchSet>["patches"],
  paths: string[],
  at = new Date(0),
) {
  const record = (path: string) => ({
    sourceHash: sourceHash(path)!,
    compilerRevision: "artifact-v1",
    compiledAt: at.toISOString(),
  });
  const provenance = { global: Object.fromEntries(paths.map((p) => [p, record(p)])) };
  return (await store.commit(runtime, patches, "test: compile", { provenance })).runtime;
}
