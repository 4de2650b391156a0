// KnowledgeRun over a real Knowledge root and a real file-only store's runtime: what a run's plan
// says before and after discovery, what a read obliges, and which provenance it then owes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
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
  return { root, runtime, source: join(root, "a.md") };
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
    expect(run.owed(new Date(0))).toBeUndefined();
    run.sourceRead(runtime, source);
    expect(run.unmet(parsePatchSet({ final: true })).map((o) => o.path)).toEqual([source]);
    const compiled = parsePatchSet({ global: { artifacts: { [source]: { description: "A" } } } });
    expect(run.unmet(compiled)).toEqual([]);
    expect(run.owed(new Date(0))).toEqual({
      global: {
        [source]: {
          sourceHash: expect.stringMatching(/^sha256:/),
          compilerRevision: "artifact-v1",
          compiledAt: "1970-01-01T00:00:00.000Z",
        },
      },
    });
    run.compiled([source]);
    expect(run.owed(new Date(0))).toBeUndefined();
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
});
