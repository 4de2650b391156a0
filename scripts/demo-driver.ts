// The demo's driver and printer: opens an offline Pi session with State Flow bound to a UI that
// prints its notices, drives it through scripted runs and slash commands, and condenses what the
// model receives (the messages, the runtime context's sections) and what the tools return into one
// line each, so a person can read the whole demo top to bottom. The scenario — which runs, in which
// order — lives in demo-session.ts; this module knows nothing of it, so further demo sections
// (demo-history.ts) reuse the same driver.

import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type AssistantMessage, type Context, type FauxResponseStep, type Message } from "@earendil-works/pi-ai";
import { SessionManager, type AgentSession, type AgentSessionEvent } from "@earendil-works/pi-coding-agent";
import { createStateFlowExtension } from "../index.ts";
import { createOfflineSession, offlineCommandActions, type OfflineSession } from "../adapters/pi/offline-session.ts";
import { providerRequest } from "../adapters/pi/provider-request.ts";
import { CONTINUED_MARKER } from "../adapters/pi/context.ts";
import type { RuntimeAccessor } from "../adapters/pi/controller.ts";

/** One scripted model step: receives the context the model would see, returns its answer. */
export type Step = (context: Context) => AssistantMessage;

const STATE_FLOW_TOOLS = ["patch_state", "read_state"];

export function compact(value: unknown, max = 200): string {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The effective/scope state without empty fields, for one-line display. */
export function trimState(state: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(state)) {
    if (value === "" || (typeof value === "object" && value !== null && Object.keys(value).length === 0)) continue;
    out[key] = value;
  }
  return out;
}

export function messageText(message: Context["messages"][number]): string {
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
export function describeMessages(messages: readonly Message[]): string {
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
export function describeRuntimeContext(text: string): string[] {
  const lines = text.split("\n");
  const section = (title: string): string[] => {
    const start = lines.findIndex((l) => l.startsWith(`## ${title}`));
    if (start < 0) return [];
    // A section ends at the next heading, or where the volatile part begins (its marker, or its step line
    // when it has no paths of its own): the run part's last section is followed by it directly.
    const end = lines.findIndex(
      (l, i) => i > start && (l.startsWith("## ") || l === CONTINUED_MARKER || l.startsWith("(state[0] is the state")),
    );
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
  const shownOrNone = shownTransitions.length > 0 ? shownTransitions.join(" | ") : "(none yet on this branch)";
  out.push(`transitions:  ${shownOrNone}${older > 0 ? ` | (+${older} older)` : ""}`);
  const bootstrap = section("Bootstrap");
  if (bootstrap.length > 0) out.push("bootstrap:    yes — this migration run also sees the earlier context once");
  const invalidations = section("Artifact invalidations").slice(1);
  if (invalidations.length > 0 && !invalidations[0]!.startsWith("(none"))
    out.push(`invalidated:  ${invalidations.map((l) => l.replace(/^- /, "")).join(" | ")}`);
  const resolution = section("Resolution").slice(1);
  if (resolution.length > 0) out.push(`resolution:   ${resolution.join(" ")}`);
  return out;
}

export interface Recorder {
  lines: string[];
  print: (line: string) => void;
}

export function storeTree(storeRoot: string): string[] {
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
export interface DemoDirs {
  root: string;
  agentDir: string;
  cwd: string;
  sessionDir: string;
  storeRoot: string;
}

export function recorder(print: ((line: string) => void) | undefined): Recorder {
  const rec: Recorder = { lines: [], print: () => undefined };
  const sink = print ?? ((line: string) => console.log(line));
  rec.print = (line: string) => {
    rec.lines.push(line);
    sink(line);
  };
  return rec;
}

/** What the extension reported through Pi's UI: the footer, its notices and its errors. */
export interface DemoUi {
  footer: string | undefined;
  notices: { message: string; level: string }[];
  errors: string[];
}

/** Binds the extension to a UI that prints its notices and errors and keeps its footer. */
export async function bindDemoUi(s: AgentSession, ui: DemoUi, out: (line: string) => void): Promise<void> {
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
export class DemoDriver {
  readonly out: (line: string) => void;
  readonly session: AgentSession;
  readonly sf: RuntimeAccessor;
  private readonly faux: OfflineSession["faux"];
  private readonly ui: DemoUi;
  private inference = 0;
  private previousShown: string[] = [];
  /** Runs so far; a second session's driver continues the first's count, so the runs read as one story. */
  runNumber = 0;

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

  /** One slash command; `after: false` for a read-only one (its notice is the whole answer). */
  async command(text: string, { after = true } = {}): Promise<void> {
    const { out, session: s, sf } = this;
    out("");
    out(`── ${text} ${"─".repeat(Math.max(4, 76 - text.length))}`);
    await s.prompt(text);
    await s.waitForIdle();
    if (!after) return;
    const tools = STATE_FLOW_TOOLS.every((t) => s.getActiveToolNames().includes(t)) ? "on" : "off";
    const footer = this.footer();
    out(`  after:  episode ${sf.episode()}, step ${this.stepOf()}, State Flow tools ${tools}, footer "${footer}"`);
  }
}

/**
 * Opens the offline session with State Flow loaded; `onSession` receives it before anything can fail.
 * A new session by default; `sessionFile` opens an existing one (a fork Pi wrote) in the same agent dir
 * and store, with its own model store so the two sessions share nothing but what Pi and State Flow share.
 */
export async function openDemoSession(
  dirs: DemoDirs,
  env: NodeJS.ProcessEnv,
  rec: Recorder,
  onSession: (session: AgentSession) => void,
  sessionFile?: string,
): Promise<DemoDriver> {
  const { root, agentDir, cwd, sessionDir } = dirs;
  let accessor: RuntimeAccessor | undefined;
  const ui: DemoUi = { footer: undefined, notices: [], errors: [] };
  const created = await createOfflineSession({
    cwd,
    agentDir,
    modelsStorePath: join(root, sessionFile ? "models-opened.json" : "models.json"),
    modelId: "scripted-model",
    extensionFactories: [createStateFlowExtension({ agentDir, env, onRuntime: (a) => (accessor = a) })],
    sessionManager: sessionFile ? SessionManager.open(sessionFile, sessionDir) : SessionManager.create(cwd, sessionDir),
    skills: true,
  });
  onSession(created.session);
  await bindDemoUi(created.session, ui, rec.print);
  if (!accessor) throw new Error("State Flow did not hand out its runtime accessor: the extension did not load");
  return new DemoDriver(rec.print, created, accessor, ui);
}
