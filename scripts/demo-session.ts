// The State Flow demo: a real Pi AgentSession (Pi's faux model provider, no network) with
// State Flow loaded as an extension, driven through nine scripted runs that show what a user and
// the model observe — activation, patches in every scope, the patch_state barrier, a resolution
// retry, a historical read, stop (passive mode) and restart, Knowledge and a Skill compiled — then
// the history, a diff and a fork run in a second session (demo-history.ts), /state-flow-status and
// the store on disk. Everything happens in a temporary directory with its own Pi agent dir and a
// Git store whose demo commit identity is passed through the extension's `env` option; the
// user's Git configuration is never read or written.
//
// `scripts/demo.ts` is the command-line entry (`npm run demo [-- --keep]`); tests call runDemo(). The
// driver that opens, drives and prints a session is demo-driver.ts.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { VERSION, type AgentSession } from "@earendil-works/pi-coding-agent";
import { isolatedGitEnv, scriptedSteps } from "../adapters/pi/offline-session.ts";
import {
  compact,
  openDemoSession,
  recorder,
  storeTree,
  trimState,
  type DemoDirs,
  type DemoDriver,
} from "./demo-driver.ts";
import { showHistoryAndFork } from "./demo-history.ts";

export interface DemoOptions {
  /** Keep the temporary directory (agent dir, project, sessions, store) instead of deleting it. */
  keep?: boolean;
  /** Receives every timeline line (default: console.log). */
  print?: (line: string) => void;
}

export interface DemoResult {
  /** The temporary root (already deleted unless `keep`). */
  root: string;
  storeRoot: string;
  /** Every printed line. */
  lines: string[];
  /** Final effective state (offset 0). */
  finalState: unknown;
  /** Episode state after the last run. */
  episode: string;
  /** `git log --oneline` of the store, newest first. */
  gitLog: string[];
}

const { say, call, calls } = scriptedSteps("demo");

function makeDemoDirs(): DemoDirs {
  const root = mkdtempSync(join(tmpdir(), "state-flow-demo-"));
  const agentDir = join(root, "agent");
  const cwd = join(root, "todo-cli");
  const sessionDir = join(root, "sessions");
  for (const dir of [agentDir, cwd, sessionDir]) mkdirSync(dir, { recursive: true });
  // A project Skill Pi's resource loader finds (.pi/skills), for the Skill-compilation run.
  mkdirSync(join(cwd, ".pi", "skills", "todo-style"), { recursive: true });
  writeFileSync(join(cwd, ".pi", "skills", "todo-style", "SKILL.md"), TODO_STYLE_SKILL);
  return { root, agentDir, cwd, sessionDir, storeRoot: join(agentDir, "state-flow") };
}

function printIntro(d: DemoDriver, dirs: DemoDirs): void {
  const { root, agentDir, cwd, storeRoot } = dirs;
  const tools = d.session.getActiveToolNames().includes("patch_state") ? "on" : "off";
  d.out(`State Flow demo — a real Pi ${VERSION} AgentSession, scripted faux model, nothing leaves this machine`);
  d.out(`  temp dir:  ${root}`);
  d.out(
    `  agent dir: ${relative(root, agentDir)}/ (PI_CODING_AGENT_DIR)   project: ${relative(root, cwd)}/   ` +
      `store: ${relative(root, storeRoot)}/ (Git)`,
  );
  d.out(`  before:    episode ${d.sf.episode()} (manual activation is the default), State Flow tools ${tools}`);
}

async function activateAndPatchEveryScope(d: DemoDriver): Promise<void> {
  await d.command("/state-flow-start");
  await d.run(
    "one patch_state, all three scopes",
    "New project: a todo CLI in TypeScript. I always want short answers. First task: list todos.",
    call("patch_state", {
      global: { contract: { answerStyle: "short" } },
      cwd: { contract: { project: "todo CLI", language: "TypeScript" } },
      session: { working: { task: "list todos", status: "planned" } },
      final: true,
    }),
    say("Noted: todo CLI in TypeScript, short answers. Next: implement `todo list`."),
  );
}

async function runBarrier(d: DemoDriver): Promise<void> {
  await d.run(
    "the barrier: patch_state must run alone",
    "Store todos in a JSON file. Implement list.",
    calls(
      [
        "patch_state",
        {
          cwd: { contract: { storage: "todos.json" } },
          session: { working: { status: "list implemented" } },
          final: true,
        },
      ],
      ["read_state", { offset: 1 }],
    ),
    say("`todo list` reads todos.json. Done."),
  );
}

async function runResolutionRetry(d: DemoDriver): Promise<void> {
  await d.run(
    "resolution retry: an answer without final:true",
    "Add a --done flag.",
    say("Added --done."),
    call("patch_state", { session: { working: { task: "--done flag", status: "implemented" } }, final: true }),
    say("Added `todo done <id>` (the --done flag)."),
  );
}

async function runHistoricalRead(d: DemoDriver): Promise<void> {
  await d.run(
    "read_state at offset 1",
    "What was the session state one transition ago?",
    call("read_state", { offset: 1, scope: "session" }),
    call("patch_state", { final: true }),
    say("One transition ago the task was the --done flag, implemented, before my last answer was recorded."),
  );
}

async function stopIntoPassiveMode(d: DemoDriver): Promise<void> {
  await d.command("/state-flow-stop");
  await d.run("passive mode: State Flow stopped", "Unrelated: what is 2+2?", say("4."));
}

async function restartFromHandoff(d: DemoDriver): Promise<void> {
  await d.command("/state-flow-start");
  await d.run(
    "restart: bootstrap from the frozen handoff",
    "Back to the CLI: what is next?",
    call("patch_state", { session: { working: { task: "delete command", status: "next" } }, final: true }),
    say("Next: `todo rm <id>`."),
  );
}

/** A Knowledge source appears, is read and compiled into a global artifact, then changes on disk. */
async function compileKnowledge(d: DemoDriver, dirs: DemoDirs): Promise<void> {
  const source = join(dirs.agentDir, "knowledge", "cli-conventions.md");
  mkdirSync(join(dirs.agentDir, "knowledge"), { recursive: true });
  writeFileSync(source, "# CLI conventions\nExit 1 on usage errors. Print errors to stderr.\n");
  d.out("");
  d.out(`  (a Knowledge source appears: ${relative(dirs.root, source)})`);
  await d.run(
    "knowledge: a new source is read and compiled",
    "Make `todo rm` follow our CLI conventions.",
    call("read", { path: source }),
    call("patch_state", {
      global: {
        artifacts: {
          [source]: { description: "CLI conventions: exit codes and where errors go", tags: ["cli"] },
        },
      },
      session: { working: { task: "rm follows the CLI conventions", status: "implemented" } },
      final: true,
    }),
    say("`todo rm` exits 1 on usage errors and prints errors to stderr."),
  );
  writeFileSync(source, "# CLI conventions\nExit 2 on usage errors. Print errors to stderr.\n");
  d.out("");
  d.out("  (the source changes on disk: its recorded hash no longer matches)");
  await d.run(
    "knowledge: a changed source is invalidated again",
    "Anything to revisit?",
    call("patch_state", { session: { working: { next: "re-read the changed CLI conventions" } }, final: true }),
    say("The CLI conventions changed; I will re-read them before the next change."),
  );
}

const TODO_STYLE_SKILL =
  "---\nname: todo-style\ndescription: House style for the todo CLI's output. Use when printing todos.\n---\n" +
  "# Todo style\nOne todo per line: `[ ] text` or `[x] text`. No colours when stdout is not a TTY.\n";

/** Pi lists the project's Skill; the model reads it, and the next patch_state must compile it into cwd. */
async function compileSkill(d: DemoDriver, dirs: DemoDirs): Promise<void> {
  const skill = join(dirs.cwd, ".pi", "skills", "todo-style", "SKILL.md");
  await d.run(
    "a Skill read obliges its compilation",
    "Print the list in our house style.",
    call("read", { path: skill }),
    call("patch_state", { session: { working: { task: "list in house style" } }, final: true }),
    call("patch_state", {
      cwd: {
        artifacts: {
          [skill]: {
            description: "Todo CLI output style",
            kind: "skill",
            compilation: { applies: "printing todos", rules: ["[ ] / [x] per line", "no colours without a TTY"] },
          },
        },
      },
      session: { working: { task: "list in house style", status: "implemented" } },
      final: true,
    }),
    say("`todo list` now prints `[ ] text` / `[x] text`, without colours when piped."),
  );
}

async function printStatus(d: DemoDriver): Promise<void> {
  d.out("");
  d.out(`── /state-flow-status ${"─".repeat(58)}`);
  await d.session.prompt("/state-flow-status");
  await d.session.waitForIdle();
}

/** Prints the store's files and its Git history; returns `git log --oneline`, newest first. */
function printStore(d: DemoDriver, dirs: DemoDirs, env: NodeJS.ProcessEnv): string[] {
  const { root, storeRoot } = dirs;
  d.out("");
  d.out(`── the store on disk: ${relative(root, storeRoot)}/ ${"─".repeat(40)}`);
  for (const line of storeTree(storeRoot)) d.out(line);
  const log = spawnSync("git", ["log", "--oneline"], { cwd: storeRoot, env, encoding: "utf8" });
  if (log.status !== 0) throw new Error(`git log failed in the store: ${log.stderr}`);
  const gitLog = log.stdout.trim().split("\n");
  d.out("");
  d.out(`── git log --oneline (store, newest first) ${"─".repeat(36)}`);
  for (const line of gitLog) d.out(`  ${line}`);
  return gitLog;
}

export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const started = Date.now();
  const rec = recorder(options.print);
  const dirs = makeDemoDirs();
  const { root, storeRoot } = dirs;
  const env = isolatedGitEnv(root, "State Flow Demo");
  const previousEnv = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_OFFLINE: process.env.PI_OFFLINE };
  process.env.PI_CODING_AGENT_DIR = dirs.agentDir; // Pi's getAgentDir() follows this, not the SDK option
  process.env.PI_OFFLINE = "1";
  // An interrupted demo (Ctrl-C, a closed pipe) still removes its temporary directory.
  const cleanupOnExit = () => {
    if (!options.keep) rmSync(root, { recursive: true, force: true });
  };
  process.on("exit", cleanupOnExit);

  let session: AgentSession | undefined;
  let forkSession: AgentSession | undefined;
  try {
    const d = await openDemoSession(dirs, env, rec, (s) => (session = s));
    d.trace();
    printIntro(d, dirs);
    await activateAndPatchEveryScope(d);
    await runBarrier(d);
    await runResolutionRetry(d);
    await runHistoricalRead(d);
    await stopIntoPassiveMode(d);
    await restartFromHandoff(d);
    await compileKnowledge(d, dirs);
    await compileSkill(d, dirs);
    const fork = await showHistoryAndFork(d, dirs, env, rec, (s) => (forkSession = s));
    await printStatus(d);
    const gitLog = printStore(d, dirs, env);

    const finalState = d.sf.read(0).state;
    d.out("");
    d.out(`final effective state[0]: ${compact(trimState(finalState as never), 400)}`);
    const errors = [...d.errors(), ...fork.errors()];
    if (errors.length > 0) throw new Error(`the demo hit ${errors.length} extension error(s): ${errors.join("; ")}`);
    const kept = options.keep ? ` — kept ${root}` : " — temp dir removed (pass --keep to inspect it)";
    d.out(`done in ${((Date.now() - started) / 1000).toFixed(1)} s${kept}`);
    return { root, storeRoot, lines: rec.lines, finalState, episode: d.sf.episode(), gitLog };
  } finally {
    await forkSession?.dispose?.();
    await session?.dispose?.();
    if (previousEnv.PI_CODING_AGENT_DIR === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = previousEnv.PI_CODING_AGENT_DIR;
    if (previousEnv.PI_OFFLINE === undefined) delete process.env.PI_OFFLINE;
    else process.env.PI_OFFLINE = previousEnv.PI_OFFLINE;
    process.off("exit", cleanupOnExit);
    if (!options.keep) rmSync(root, { recursive: true, force: true });
  }
}
