// The State Flow demo: a real Pi AgentSession (Pi's faux model provider, no network) with
// State Flow loaded as an extension, driven through nine scripted runs that show what a user and
// the model observe — activation, patches in every scope, the patch_state barrier, a resolution
// retry, a historical read, stop (passive mode) and restart — followed by /state-flow-status and
// the store on disk. Everything happens in a temporary directory with its own Pi agent dir and a
// Git store whose demo commit identity is passed through the extension's `env` option; the
// user's Git configuration is never read or written.
//
// `scripts/demo.ts` is the command-line entry (`npm run demo [-- --keep]`); tests call runDemo().

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { type AssistantMessage, type Context, type FauxResponseStep, type Message } from "@earendil-works/pi-ai";
import { SessionManager, VERSION, type AgentSession, type AgentSessionEvent } from "@earendil-works/pi-coding-agent";
import { createStateFlowExtension } from "../adapters/pi/extension.ts";
import {
  createOfflineSession,
  isolatedGitEnv,
  offlineCommandActions,
  scriptedSteps,
  type OfflineSession,
} from "../adapters/pi/offline-session.ts";
import { providerRequest } from "../adapters/pi/provider-request.ts";
import { CONTINUED_MARKER } from "../adapters/pi/context.ts";
import type { RuntimeAccessor } from "../adapters/pi/controller.ts";

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

type Step = (context: Context) => AssistantMessage;

const { say, call, calls } = scriptedSteps("demo");

const STATE_FLOW_TOOLS = ["patch_state", "read_state"];

function compact(value: unknown, max = 200): string {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The effective/scope state without empty fields, for one-line display. */
function trimState(state: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(state)) {
    if (value === "" || (typeof value === "object" && value !== null && Object.keys(value).length === 0)) continue;
    out[key] = value;
  }
  return out;
}

function messageText(message: Context["messages"][number]): string {
  const content = (message as { content: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .flatMap((block: { type?: string; text?: string }) => (block.type === "text" ? [block.text ?? ""] : []))
    .join("\n\n");
}

/** The runtime context's volatile part, when it follows the run's trajectory as its own message. */
const isVolatilePart = (text: string) => text.startsWith(CONTINUED_MARKER);

/** One line naming each message the model receives. */
function describeMessages(messages: readonly Message[]): string {
  return messages
    .map((message) => {
      const text = messageText(message);
      if (message.role === "user") {
        if (isVolatilePart(text)) return "runtime-context (volatile part)";
        if (text.startsWith("[State Flow runtime context")) return "runtime-context";
        if (text.startsWith("[State Flow stopped")) return "frozen-handoff";
        if (text.startsWith("[State Flow resolution")) return "hidden-steer";
        return `user "${text.length > 40 ? `${text.slice(0, 39)}…` : text}"`;
      }
      if (message.role === "assistant") {
        const tools = (message.content as { type: string; name?: string }[])
          .filter((b) => b.type === "toolCall")
          .map((b) => b.name);
        return tools.length > 0 ? `assistant→${tools.join("+")}` : "assistant";
      }
      return `result(${(message as { toolName?: string }).toolName})`;
    })
    .join(", ");
}

/** The interesting sections of the runtime-context message, each on its own line. */
function describeRuntimeContext(text: string): string[] {
  const lines = text.split("\n");
  const section = (title: string): string[] => {
    const start = lines.findIndex((l) => l.startsWith(`## ${title}`));
    if (start < 0) return [];
    const end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
    return lines.slice(start, end < 0 ? undefined : end).filter((l) => l.trim() !== "");
  };
  const out: string[] = [];
  const spec = section("Current specification");
  out.push(`request:      ${spec.slice(1).join(" ")}`);
  // state[0]: the stable paths, the response line and the volatile paths, merged back into one state.
  const stepLine = lines.find((l) => l.startsWith("(state[0] is the state at step")) ?? "";
  const step = /at step (\d+)/.exec(stepLine)?.[1] ?? "?";
  const jsonOf = (title: string) =>
    section(title)
      .filter((l) => !/^(##|```|\(state\[0\]|state\[0\]\.response: )/.test(l))
      .join("\n");
  try {
    const stable = JSON.parse(jsonOf("state[0] — ")) as Record<string, Record<string, unknown>>;
    const continued = jsonOf("state[0], continued");
    const volatile = (continued ? JSON.parse(continued) : {}) as Record<string, Record<string, unknown>>;
    const state: Record<string, unknown> = {};
    for (const field of ["artifacts", "contract", "working"])
      state[field] = { ...(stable[field] ?? {}), ...(volatile[field] ?? {}) };
    const response = lines.find((l) => l.startsWith("state[0].response: "));
    if (response) state.response = JSON.parse(response.slice("state[0].response: ".length)) as string;
    out.push(`state[0]:     step ${step} ${compact(trimState(state), 150)}`);
  } catch {
    out.push(`state[0]:     step ${step} (unparsed)`);
  }
  const transitions = section("Recent transitions").slice(1);
  const shownTransitions = transitions.slice(0, 3).map((l) => l.replace(/^- /, ""));
  const older = transitions.length - shownTransitions.length;
  out.push(`transitions:  ${shownTransitions.join(" | ")}${older > 0 ? ` | (+${older} older)` : ""}`);
  const bootstrap = section("Bootstrap");
  if (bootstrap.length > 0) out.push("bootstrap:    yes — this migration run also sees the earlier context once");
  const invalidations = section("Artifact invalidations").slice(1);
  if (invalidations.length > 0 && !invalidations[0]!.startsWith("(none"))
    out.push(`invalidated:  ${invalidations.map((l) => l.replace(/^- /, "")).join(" | ")}`);
  const resolution = section("Resolution").slice(1);
  if (resolution.length > 0) out.push(`resolution:   ${resolution.join(" ")}`);
  return out;
}

interface Recorder {
  lines: string[];
  print: (line: string) => void;
}

function storeTree(storeRoot: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort(
      (a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || a.name.localeCompare(b.name),
    );
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const indent = "  ".repeat(depth);
      if (entry.isDirectory()) {
        if (entry.name === ".git") {
          out.push(`${indent}.git/                                   (Git repository: full history)`);
          continue;
        }
        out.push(`${indent}${entry.name}/`);
        walk(path, depth + 1);
      } else {
        out.push(`${indent}${entry.name.padEnd(40 - indent.length)}${String(statSync(path).size).padStart(6)} bytes`);
      }
    }
  };
  walk(storeRoot, 1);
  return out;
}

/** The demo's directories, all below one temporary root. */
interface DemoDirs {
  root: string;
  agentDir: string;
  cwd: string;
  sessionDir: string;
  storeRoot: string;
}

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

function recorder(print: ((line: string) => void) | undefined): Recorder {
  const rec: Recorder = { lines: [], print: () => undefined };
  const sink = print ?? ((line: string) => console.log(line));
  rec.print = (line: string) => {
    rec.lines.push(line);
    sink(line);
  };
  return rec;
}

/** What the extension reported through Pi's UI: the footer, its notices and its errors. */
interface DemoUi {
  footer: string | undefined;
  notices: { message: string; level: string }[];
  errors: string[];
}

/** Binds the extension to a UI that prints its notices and errors and keeps its footer. */
async function bindDemoUi(s: AgentSession, ui: DemoUi, out: (line: string) => void): Promise<void> {
  const uiContext = new Proxy(
    {
      notify: (message: string, level = "info") => {
        ui.notices.push({ message, level });
        out(`  [notice:${level}] ${message.split("\n").join("\n    ")}`);
      },
      setStatus: (key: string, text: string | undefined) => {
        if (key === "state-flow") ui.footer = text;
      },
    } as Record<string, unknown>,
    { get: (target, key) => target[key as string] ?? (() => undefined) },
  );
  await s.bindExtensions({
    uiContext: uiContext as never,
    onError: (error: unknown) => {
      const text = `extension error: ${String((error as { error?: unknown }).error ?? error)}`;
      ui.errors.push(text);
      out(`  !! ${text}`);
    },
    commandContextActions: offlineCommandActions(s),
  });
}

/**
 * Drives the session through scripted runs and slash commands and prints what happens during a
 * run, in order: each inference's context, the model's output, tool results and steers.
 */
class DemoDriver {
  readonly out: (line: string) => void;
  readonly session: AgentSession;
  readonly sf: RuntimeAccessor;
  private readonly faux: OfflineSession["faux"];
  private readonly ui: DemoUi;
  private inference = 0;
  private previousShown: string[] = [];
  private runNumber = 0;

  constructor(out: (line: string) => void, created: OfflineSession, sf: RuntimeAccessor, ui: DemoUi) {
    this.out = out;
    this.session = created.session;
    this.faux = created.faux;
    this.sf = sf;
    this.ui = ui;
  }

  /** Prints the model's output, the hidden steers and the tool results as the session emits them. */
  trace(): void {
    const out = this.out;
    this.session.subscribe((event: AgentSessionEvent) => {
      if (event.type === "message_end") {
        const message = event.message as { role: string; content?: unknown; customType?: string; stopReason?: string };
        if (message.role === "assistant") {
          const blocks = message.content as { type: string; text?: string; name?: string; arguments?: unknown }[];
          for (const block of blocks) {
            if (block.type === "toolCall") out(`      model calls ${block.name} ${compact(block.arguments, 150)}`);
            else if (block.type === "text" && block.text) out(`      model answers "${block.text}"`);
          }
        } else if (message.role === "custom" && message.customType === "state-flow-resolution") {
          out(`      ⤷ hidden steer (same run, not shown to the user): ${compact(message.content, 130)}`);
        }
      } else if (event.type === "tool_execution_end") {
        const content = (event.result as { content?: { text?: string }[] })?.content ?? [];
        const text = content.map((c) => c.text ?? "").join("");
        let oneLine = text.replace(/\s+/g, " ").trim();
        if (event.toolName === "read_state" && !event.isError) {
          const read = JSON.parse(text) as {
            offset: number;
            scope: string;
            boundary: { step: number };
            state: Record<string, unknown>;
          };
          const name = `state${read.scope === "effective" ? "" : `.${read.scope}`}[${read.offset}]`;
          oneLine = `${name} = boundary step ${read.boundary.step}: ${compact(trimState(read.state), 170)}`;
        }
        const shown = oneLine.length > 220 ? `${oneLine.slice(0, 219)}…` : oneLine;
        out(`      ${event.isError ? "✗" : "✓"} ${event.toolName}: ${shown}`);
      }
    });
  }

  /** Queues the model's steps; each prints what the model receives before it answers. */
  private script(...steps: Step[]): void {
    this.faux.appendResponses(
      steps.map<FauxResponseStep>((step) => (context: Context) => {
        this.inference += 1;
        const request = providerRequest(context);
        const tools = request.tools.map((t) => t.name).filter((n) => STATE_FLOW_TOOLS.includes(n));
        const protocol = (request.systemPrompt ?? "").includes("## State Flow protocol");
        const toolList = tools.length > 0 ? tools.join(", ") : "(no State Flow tools)";
        const inSystemPrompt = protocol ? "yes" : "no";
        this.out(`    inference ${this.inference}: tools ${toolList}; protocol in system prompt: ${inSystemPrompt}`);
        this.out(`      context: [${describeMessages(request.messages)}]`);
        const shown: string[] = [];
        const texts = request.messages.map(messageText);
        const runtime = texts.find((t) => t.startsWith("[State Flow runtime context"));
        const volatilePart = texts.find(isVolatilePart) ?? "";
        if (runtime) shown.push(...describeRuntimeContext(`${runtime}\n${volatilePart}`));
        const handoff = texts.find((t) => t.startsWith("[State Flow stopped"));
        if (handoff) {
          const frozen = JSON.parse(handoff.slice(handoff.indexOf("\n") + 1)) as Record<string, unknown>;
          shown.push(`frozen handoff: ${compact(trimState(frozen), 180)}`);
        }
        // Later inferences of a run print only the runtime-context lines that changed.
        const fresh = shown.filter((line) => !this.previousShown.includes(line));
        const unchanged = this.inference > 1 && shown.length > 0 && fresh.length === 0;
        if (unchanged) this.out("        (runtime context unchanged)");
        for (const line of fresh) this.out(`        ${line}`);
        this.previousShown = shown;
        return step(context);
      }),
    );
  }

  stepOf(): string {
    try {
      return String(this.sf.read(0).boundary.step);
    } catch {
      return "-";
    }
  }

  footer(): string {
    return this.ui.footer ?? "";
  }

  errors(): readonly string[] {
    return this.ui.errors;
  }

  /** One user prompt answered by exactly the scripted steps. */
  async run(title: string, prompt: string, ...steps: Step[]): Promise<void> {
    const { out, session: s, sf } = this;
    this.runNumber += 1;
    this.inference = 0;
    this.previousShown = [];
    out("");
    out(`── Run ${this.runNumber}: ${title} ${"─".repeat(Math.max(4, 70 - title.length))}`);
    out(`  user> ${prompt}`);
    this.script(...steps);
    await s.prompt(prompt);
    await s.waitForIdle();
    const pending = this.faux.getPendingResponseCount();
    if (pending > 0) {
      throw new Error(
        `run ${this.runNumber} ended with ${pending} unused scripted model step(s): the flow diverged from the script`,
      );
    }
    const last = [...s.messages].reverse().find((m) => m.role === "assistant");
    const answer = last ? messageText(last as never) : "";
    let accepted = "—";
    try {
      accepted = sf.read(0, "session").state.response === answer ? "accepted as session.response" : "not committed";
    } catch {
      accepted = "not committed (no runtime)";
    }
    out(`  answer: "${answer}" → ${accepted}`);
    out(`  after:  episode ${sf.episode()}, step ${this.stepOf()}, footer "${this.footer()}"`);
  }

  /** One slash command. */
  async command(text: string): Promise<void> {
    const { out, session: s, sf } = this;
    out("");
    out(`── ${text} ${"─".repeat(Math.max(4, 76 - text.length))}`);
    await s.prompt(text);
    await s.waitForIdle();
    const tools = STATE_FLOW_TOOLS.every((t) => s.getActiveToolNames().includes(t)) ? "on" : "off";
    const footer = this.footer();
    out(`  after:  episode ${sf.episode()}, step ${this.stepOf()}, State Flow tools ${tools}, footer "${footer}"`);
  }
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

/** Opens the offline session with State Flow loaded; `onSession` receives it before anything can fail. */
async function openDemoSession(
  dirs: DemoDirs,
  env: NodeJS.ProcessEnv,
  rec: Recorder,
  onSession: (session: AgentSession) => void,
): Promise<DemoDriver> {
  const { root, agentDir, cwd, sessionDir } = dirs;
  let accessor: RuntimeAccessor | undefined;
  const ui: DemoUi = { footer: undefined, notices: [], errors: [] };
  const created = await createOfflineSession({
    cwd,
    agentDir,
    modelsStorePath: join(root, "models.json"),
    modelId: "scripted-model",
    extensionFactories: [createStateFlowExtension({ agentDir, env, onRuntime: (a) => (accessor = a) })],
    sessionManager: SessionManager.create(cwd, sessionDir),
    skills: true,
  });
  onSession(created.session);
  await bindDemoUi(created.session, ui, rec.print);
  if (!accessor) throw new Error("State Flow did not hand out its runtime accessor: the extension did not load");
  return new DemoDriver(rec.print, created, accessor, ui);
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
    await printStatus(d);
    const gitLog = printStore(d, dirs, env);

    const finalState = d.sf.read(0).state;
    d.out("");
    d.out(`final effective state[0]: ${compact(trimState(finalState as never), 400)}`);
    const errors = d.errors();
    if (errors.length > 0) throw new Error(`the demo hit ${errors.length} extension error(s): ${errors.join("; ")}`);
    const kept = options.keep ? ` — kept ${root}` : " — temp dir removed (pass --keep to inspect it)";
    d.out(`done in ${((Date.now() - started) / 1000).toFixed(1)} s${kept}`);
    return { root, storeRoot, lines: rec.lines, finalState, episode: d.sf.episode(), gitLog };
  } finally {
    await session?.dispose?.();
    if (previousEnv.PI_CODING_AGENT_DIR === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = previousEnv.PI_CODING_AGENT_DIR;
    if (previousEnv.PI_OFFLINE === undefined) delete process.env.PI_OFFLINE;
    else process.env.PI_OFFLINE = previousEnv.PI_OFFLINE;
    process.off("exit", cleanupOnExit);
    if (!options.keep) rmSync(root, { recursive: true, force: true });
  }
}
