// npm run bench:resume-load — what State Flow adds to reopening a session and to Pi's start, in one run
// (issue 27, item 4). Prints ratios with PASS/FAIL; never asserts.
//
// (a) Resume: one native and one State Flow session per mode (file-only, Git) at 8 KiB run
//     RESUME_LOAD_RUNS (200) runs of the e2e workload (bench/e2e-fixture.ts); then each is reopened
//     RESUME_LOAD_SAMPLES (7) times, interleaved, in a fresh OS process (bench/e2e-resume-child.ts:
//     Pi creates the session, binds the extensions — State Flow restores — and builds the first
//     context; module imports excluded). Plain Pi's own first-context time is native's; State
//     Flow's overhead is its first-context time minus native's. Target: overhead ≤ 2× native.
// (b) Load: Pi's real command line (`pi -p`, the bundled CLI `pi` runs) started LOAD_SAMPLES (10)
//     times each, interleaved: without the package, and with it installed from this checkout
//     (`pi install <checkout>` into a scratch agent dir, the way a user installs it: the package.json
//     `pi` field names adapters/pi/state-flow.ts) in each of its two forms — the build in dist/ (which this
//     bench makes first, as `npm run build` does) and the sources (STATE_FLOW_SOURCES=1). A local HTTP
//     server stands in for the provider; start = spawn → the first request arrives (node's start, Pi's
//     start, extension load, session_start, first context). Pi's own PI_TIMING figures give the entry's
//     import (jiti) and its factory (which loads the build or the sources) apart.
//     Target: with the build − without ≤ 100 ms.
//
//   npm run bench:resume-load
//   RESUME_LOAD_PROFILE_DIR=/tmp/p npm run bench:resume-load   # also one CPU-profiled resume per State Flow mode
//   RESUME_LOAD_RUNS=50 RESUME_LOAD_SAMPLES=3 LOAD_SAMPLES=5 npm run bench:resume-load   # a quick look

import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { createBenchEnv, openCase, resumeSample, runOnce, type Case, type ResumeSample } from "./e2e-run.ts";
import { summarizeProfile, type CpuProfile } from "./e2e-profile.ts";
import { buildPackage } from "../scripts/build.mjs";
import { p50, round } from "./e2e-stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(dirname(fileURLToPath(import.meta.resolve("@earendil-works/pi-coding-agent"))), "bundle", "cli.js");

function intOf(name: string, fallback: number): number {
  const n = Number.parseInt(process.env[name] ?? "", 10);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

const RUNS = Math.max(1, intOf("RESUME_LOAD_RUNS", 200));
const RESUME_SAMPLES = Math.max(1, intOf("RESUME_LOAD_SAMPLES", 7));
const LOAD_SAMPLES = Math.max(1, intOf("LOAD_SAMPLES", 10));
const SKIP = new Set((process.env.RESUME_LOAD_SKIP ?? "").split(",").filter((s) => s !== ""));

const pass = (ok: boolean) => (ok ? "PASS" : "FAIL");

interface ResumeFigures {
  native: number;
  byMode: Record<string, { firstContext: number; bind: number; create: number; git: number; overhead: number }>;
}

async function resumePart(): Promise<ResumeFigures> {
  const env = createBenchEnv();
  const cases: Case[] = [];
  try {
    for (const mode of ["native", "file", "git"] as const)
      cases.push(await openCase(env, { mode, sizeKiB: 8, label: "", timed: false }));
    const started = performance.now();
    for (let run = 1; run <= RUNS; run++) {
      for (const c of cases) await runOnce(c, run, { account: false });
      if (run % 50 === 0)
        process.stderr.write(`  … ${run}/${RUNS} runs (${round((performance.now() - started) / 1000, 0)} s)\n`);
    }
    const samples = new Map<string, ResumeSample[]>();
    for (let s = 0; s < RESUME_SAMPLES; s++)
      for (let j = 0; j < cases.length; j++) {
        const c = cases[(j + s) % cases.length]!;
        const sample = await resumeSample(env, c, s);
        if (sample.errors.length > 0) throw new Error(`${c.id} resumed with: ${sample.errors.join("; ")}`);
        if (c.mode !== "native" && sample.restoredStep === null) throw new Error(`${c.id}: no state restored`);
        samples.set(c.mode, [...(samples.get(c.mode) ?? []), sample]);
      }
    const profileDir = process.env.RESUME_LOAD_PROFILE_DIR;
    if (profileDir) {
      // One more resume per State Flow case, CPU-profiled from opening the session to its first context.
      mkdirSync(profileDir, { recursive: true });
      for (const c of cases.filter((x) => x.mode !== "native")) {
        const file = join(profileDir, `resume-${c.id}.cpuprofile`);
        await resumeSample(env, c, RESUME_SAMPLES, file);
        const summary = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, 1, file);
        process.stderr.write(`  profile ${file}: ${round(summary.totalMs)} ms sampled\n`);
        for (const x of summary.inclusive.slice(0, 25)) process.stderr.write(`    ${round(x.msPerRun)} ${x.fn}\n`);
      }
    }
    const of = (mode: string, pick: (s: ResumeSample) => number) => p50((samples.get(mode) ?? []).map(pick));
    const native = of("native", (s) => s.firstContextMs);
    const byMode: ResumeFigures["byMode"] = {};
    for (const mode of ["file", "git"]) {
      const firstContext = of(mode, (s) => s.firstContextMs);
      byMode[mode] = {
        firstContext,
        bind: of(mode, (s) => s.bindMs),
        create: of(mode, (s) => s.createMs),
        git: of(mode, (s) => s.git.length),
        overhead: firstContext - native,
      };
    }
    return { native, byMode };
  } finally {
    for (const c of cases) await c.bench.session.dispose?.();
    rmSync(env.work, { recursive: true, force: true });
  }
}

interface LoadSample {
  startMs: number;
  importMs: number | null;
  factoryMs: number | null;
}

type LoadCase = "without" | "build" | "sources";

/** A provider that only notes when a request arrives and then refuses it (Pi does not retry a 400). */
function fakeProvider(): Promise<{ server: Server; port: number; next: () => Promise<number> }> {
  let waiter: ((t: number) => void) | undefined;
  const server = createServer((req, res) => {
    const t = performance.now();
    req.resume();
    req.on("end", () => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "bench: no model here", type: "invalid_request_error" } }));
    });
    waiter?.(t);
    waiter = undefined;
  });
  return new Promise((done) =>
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      done({ server, port, next: () => new Promise<number>((r) => (waiter = r)) });
    }),
  );
}

function writeAgentDir(dir: string, port: number): void {
  mkdirSync(dir, { recursive: true });
  const provider = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    api: "openai-completions",
    apiKey: "bench",
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
    models: [{ id: "bench-model" }],
  };
  writeFileSync(join(dir, "models.json"), JSON.stringify({ providers: { bench: provider } }, null, 2));
}

async function startOnce(
  which: LoadCase,
  agentDir: string,
  work: string,
  sample: number,
  next: () => Promise<number>,
): Promise<LoadSample> {
  const cwd = join(work, "cwd");
  const sessionDir = join(work, "sessions", `${sample}-${which}`);
  mkdirSync(sessionDir, { recursive: true });
  const arrived = next();
  const t0 = performance.now();
  const env: NodeJS.ProcessEnv = { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_TIMING: "1" };
  if (which === "sources") env.STATE_FLOW_SOURCES = "1";
  else delete env.STATE_FLOW_SOURCES;
  const child = spawn(
    process.execPath,
    [CLI, "-p", "--provider", "bench", "--model", "bench-model", "--session-dir", sessionDir, "Hello"],
    { cwd, env, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
  const t1 = await Promise.race([arrived, exited.then(() => null)]);
  if (t1 === null) throw new Error(`pi exited before asking the provider:\n${stderr}`);
  await exited;
  const ms = (label: string) => {
    const m = new RegExp(`state-flow\\.ts ${label}: (\\d+)ms`).exec(stderr);
    return m ? Number(m[1]) : null;
  };
  return { startMs: t1 - t0, importMs: ms("module import"), factoryMs: ms("factory") };
}

interface LoadFigures {
  without: number;
  /**
   * Per form of the package: p50 start; p50 of each round's difference to that round's start without
   * it (the rounds run back to back, so a change in the machine's load between rounds cancels); Pi's
   * PI_TIMING figures for the entry.
   */
  build: { start: number; paired: number; importMs: number; factoryMs: number };
  sources: { start: number; paired: number; importMs: number; factoryMs: number };
}

async function loadPart(): Promise<LoadFigures> {
  const work = mkdtempSync(join(tmpdir(), "sf-bench-load-"));
  const { server, port, next } = await fakeProvider();
  try {
    mkdirSync(join(work, "cwd"));
    const without = join(work, "agent-without");
    const withIt = join(work, "agent-with");
    writeAgentDir(without, port);
    writeAgentDir(withIt, port);
    // Installed as a user installs it from a checkout: Pi reads the package.json `pi` field.
    const install = spawnSync(process.execPath, [CLI, "install", ROOT], {
      cwd: join(work, "cwd"),
      env: { ...process.env, PI_CODING_AGENT_DIR: withIt, PI_OFFLINE: "1" },
      encoding: "utf8",
    });
    if (install.status !== 0) throw new Error(`pi install ${ROOT} failed: ${install.stderr}`);
    const cases: LoadCase[] = ["without", "build", "sources"];
    // One start each first (discarded): jiti's transpile cache and the OS file cache are warm after it.
    const samples: Record<LoadCase, LoadSample[]> = { without: [], build: [], sources: [] };
    for (let s = -1; s < LOAD_SAMPLES; s++)
      for (let j = 0; j < cases.length; j++) {
        const which = cases[(j + s + 1) % cases.length]!;
        const sample = await startOnce(which, which === "without" ? without : withIt, work, s + 1, next);
        if (which !== "without" && sample.importMs === null) throw new Error("pi did not load State Flow");
        if (s >= 0) samples[which].push(sample);
      }
    const form = (which: LoadCase) => ({
      start: p50(samples[which].map((s) => s.startMs)),
      paired: p50(samples[which].map((s, round) => s.startMs - samples.without[round]!.startMs)),
      importMs: p50(samples[which].map((s) => s.importMs ?? NaN)),
      factoryMs: p50(samples[which].map((s) => s.factoryMs ?? NaN)),
    });
    return { without: p50(samples.without.map((s) => s.startMs)), build: form("build"), sources: form("sources") };
  } finally {
    server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const load0 = loadavg()[0]!;
  const lines: string[] = [];
  const out: Record<string, unknown> = { pi: VERSION, node: process.version, cores: cpus().length };
  if (!SKIP.has("resume")) {
    const r = await resumePart();
    lines.push(
      `Resume after ${RUNS} runs (8 KiB, fresh process, p50 of ${RESUME_SAMPLES}): plain Pi's first context ` +
        `${round(r.native)} ms`,
      "| mode | first context ms | overhead ms (− native) | overhead / native | of which bind | git processes | ≤ 2× |",
      "|---|---|---|---|---|---|---|",
    );
    for (const [mode, f] of Object.entries(r.byMode)) {
      const ratio = f.overhead / r.native;
      lines.push(
        `| ${mode} | ${round(f.firstContext)} | ${round(f.overhead)} | ${round(ratio, 3)} | ${round(f.bind)} | ` +
          `${f.git} | ${pass(ratio <= 2)} |`,
      );
    }
    out.resume = r;
  }
  if (!SKIP.has("load")) {
    const built = await buildPackage();
    const l = await loadPart();
    lines.push(
      "",
      `Pi's start (\`pi -p\`, spawn → first provider request, p50 of ${LOAD_SAMPLES}, interleaved; without State ` +
        `Flow ${round(l.without)} ms). The build: dist/ (${built.sources.length} sources, built by this bench); the ` +
        "sources: STATE_FLOW_SOURCES=1, Pi's per-file compiler (jiti).",
      "| State Flow loaded from | with ms | State Flow's share ms | share, p50 of paired rounds ms | with / without " +
        "| entry import ms | factory ms | ≤ 100 ms |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const which of ["build", "sources"] as const) {
      const f = l[which];
      const share = f.start - l.without;
      lines.push(
        `| ${which} | ${round(f.start)} | ${round(share)} | ${round(f.paired)} | ${round(f.start / l.without, 3)} | ` +
          `${f.importMs} | ${f.factoryMs} | ` +
          `${which === "build" ? `${pass(share <= 100)}; paired ${pass(f.paired <= 100)}` : "(reference)"} |`,
      );
    }
    out.load = { ...l, share: l.build.start - l.without };
  }
  const seconds = round((performance.now() - started) / 1000, 1);
  lines.push(
    "",
    `Pi ${VERSION}, ${process.version}, ${cpus().length} cores, ` +
      `load ${round(load0)} → ${round(loadavg()[0]!)}, ${seconds} s`,
  );
  process.stdout.write(lines.join("\n") + "\n");
  console.log(`RESUME_LOAD ${JSON.stringify(out)}`);
}

await main();
