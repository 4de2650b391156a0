// A real Pi AgentSession for tests: Pi 0.84's faux model provider (no network), the real
// resource loader with State Flow loaded as an extension factory, in-memory or file-backed
// sessions, real git with an isolated identity. The faux model is scripted with steps that
// record the exact context each inference receives.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import {
  fauxProvider,
  fauxText,
  fauxToolCall,
  type AssistantMessage,
  type Context,
  type FauxResponseStep,
} from "@earendil-works/pi-ai";
import { SessionManager, type AgentSession, type ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { afterEach } from "vitest";
import { createStateFlowExtension } from "../../index.ts";
import {
  createOfflineSession,
  isolatedGitEnv,
  offlineCommandActions,
  scriptedSteps,
} from "../../adapters/pi/offline-session.ts";
import { findGitExecutable } from "../../storage/git/git-runner.ts";
import { providerRequest } from "../../adapters/pi/provider-request.ts";
import type { RuntimeAccessor } from "../../adapters/pi/controller.ts";

export { fauxText, fauxToolCall };

export interface HarnessOptions {
  /** Agent-level state-flow.json content (omitted: no file). */
  config?: Record<string, unknown>;
  /** "memory" (default) or "file" (a session file under the harness dir). */
  sessionKind?: "memory" | "file";
  /** Use git for the store (default) or run file-only (git absent from PATH). */
  git?: boolean;
  /** Log every git command State Flow runs in this session to this file (a logging `git` first on PATH). */
  gitLog?: string;
  /** Reuse the directories of another harness (same agent dir, cwd and store). */
  shareWith?: PiHarness;
  /** Open this session file instead of creating a new session. */
  openFile?: string;
  /** Pi's tool allowlist (as `pi --tools`); omitted: every tool. */
  tools?: string[];
  /** Let Pi load skills (the agent dir's and the project's `.pi/skills`). */
  skills?: boolean;
  /** The SDK options an embedder passes (`repositoryRoot`, `knowledgeRoot`). */
  extensionOptions?: { repositoryRoot?: string; knowledgeRoot?: string };
  /** Extra extension factories loaded after State Flow (e.g. a foreign extension). */
  extraExtensions?: ExtensionFactory[];
  /**
   * false: load the extension but do not bind it yet (no session_start): the episode stays
   * `unbound` until `bind()`. Default true.
   */
  bind?: boolean;
}

export interface Notice {
  message: string;
  level: string;
}

let counter = 0;

/** A directory holding a `git` that appends its arguments to `log`, then runs the real git. */
function loggingGit(root: string, log: string): string {
  const real = findGitExecutable();
  if (!real) throw new Error("gitLog needs git on PATH");
  const dir = join(root, `git-log-bin-${++counter}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${real}' "$@"\n`, { mode: 0o755 });
  return dir;
}

export class PiHarness {
  readonly root: string;
  readonly agentDir: string;
  readonly cwd: string;
  readonly sessionDir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly contexts: Context[] = [];
  readonly notices: Notice[] = [];
  readonly statuses: (string | undefined)[] = [];
  /** Extension loading errors Pi collected (it keeps running without the failed extension). */
  readonly loadErrors: string[] = [];
  session!: AgentSession;
  accessor!: RuntimeAccessor;
  faux!: ReturnType<typeof fauxProvider>;
  private readonly owned: boolean;
  private binding: (() => Promise<void>) | null = null;
  private idleWaiters: (() => void)[] = [];

  private constructor(options: HarnessOptions) {
    const shared = options.shareWith;
    this.owned = !shared;
    this.root = shared?.root ?? mkdtempSync(join(tmpdir(), "sf-pi-"));
    this.agentDir = join(this.root, "agent");
    this.cwd = join(this.root, "project");
    this.sessionDir = join(this.root, "sessions");
    mkdirSync(this.agentDir, { recursive: true });
    mkdirSync(this.cwd, { recursive: true });
    mkdirSync(this.sessionDir, { recursive: true });
    const env = isolatedGitEnv(this.root, "State Flow Test");
    if (options.git === false) env.PATH = join(this.root, "no-git-bin");
    else if (options.gitLog) env.PATH = `${loggingGit(this.root, options.gitLog)}${delimiter}${env.PATH ?? ""}`;
    this.env = env;
    if (options.config) writeFileSync(join(this.agentDir, "state-flow.json"), JSON.stringify(options.config));
  }

  static async create(options: HarnessOptions = {}): Promise<PiHarness> {
    const harness = new PiHarness(options);
    await harness.open(options);
    return harness;
  }

  get storeRoot(): string {
    return join(this.agentDir, "state-flow");
  }

  private async open(options: HarnessOptions): Promise<void> {
    process.env.PI_CODING_AGENT_DIR = this.agentDir;
    process.env.PI_OFFLINE = "1";
    const stateFlow = createStateFlowExtension({
      ...options.extensionOptions,
      agentDir: this.agentDir,
      env: this.env,
      onRuntime: (accessor) => {
        this.accessor = accessor;
      },
    });
    const sessionManager = options.openFile
      ? SessionManager.open(options.openFile, this.sessionDir)
      : options.sessionKind === "file"
        ? SessionManager.create(this.cwd, this.sessionDir)
        : SessionManager.inMemory(this.cwd);
    const { session, faux, loadErrors } = await createOfflineSession({
      cwd: this.cwd,
      agentDir: this.agentDir,
      modelsStorePath: join(this.root, `models-${++counter}.json`),
      extensionFactories: [stateFlow, ...(options.extraExtensions ?? [])],
      sessionManager,
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.skills ? { skills: true } : {}),
    });
    this.faux = faux;
    this.loadErrors.push(...loadErrors);
    this.session = session;
    this.binding = () => this.bindSession(session);
    if (options.bind !== false) await this.bind();
  }

  /** Binds the UI and command actions and lets Pi emit session_start (once). */
  async bind(): Promise<void> {
    const binding = this.binding;
    this.binding = null;
    await binding?.();
  }

  /**
   * Pi's quit path: session_shutdown{reason:"quit"} to the loaded extensions (the session stays readable);
   * `reason` "reload": the event a /reload sends the extensions it replaces (the session goes on).
   */
  async shutdown(reason: "quit" | "reload" = "quit"): Promise<void> {
    await this.session.extensionRunner.emit({ type: "session_shutdown", reason } as never);
  }

  /**
   * Resolves when an extension command next calls ctx.waitForIdle(), i.e. once it is known to wait
   * for the run (a handshake: a test then acts on that, not on a sleep).
   */
  commandWaitsForIdle(): Promise<void> {
    return new Promise((done) => this.idleWaiters.push(done));
  }

  private async bindSession(session: AgentSession): Promise<void> {
    const ui = new Proxy(
      {
        notify: (message: string, level = "info") => this.notices.push({ message, level }),
        setStatus: (_key: string, text: string | undefined) => this.statuses.push(text),
      } as Record<string, unknown>,
      { get: (target, key) => target[key as string] ?? (() => undefined) },
    );
    const actions = offlineCommandActions(session);
    const waitForIdle = () => {
      const waiting = actions.waitForIdle();
      for (const done of this.idleWaiters.splice(0)) done();
      return waiting;
    };
    await session.bindExtensions({
      uiContext: ui as never,
      onError: (error: unknown) =>
        this.notices.push({
          message: `extension error: ${String((error as { error?: unknown }).error ?? error)}`,
          level: "extension-error",
        }),
      commandContextActions: { ...actions, waitForIdle },
    });
  }

  /** Queues scripted model steps; each records the context it was called with. */
  script(...steps: ((context: Context) => AssistantMessage)[]): void {
    this.faux.appendResponses(
      steps.map<FauxResponseStep>((step) => (context: Context) => {
        const request = providerRequest(context);
        this.contexts.push({
          systemPrompt: request.systemPrompt,
          messages: JSON.parse(JSON.stringify(request.messages)),
          tools: request.tools.map((t) => ({ name: t.name })),
        } as Context);
        return step(context);
      }),
    );
  }

  async prompt(text: string): Promise<void> {
    await this.session.prompt(text);
    await this.session.waitForIdle();
  }

  /** Runs an extension command such as "/state-flow-start". */
  async command(text: string): Promise<void> {
    await this.prompt(text);
  }

  /** The branch's tool results, oldest first: which tool, whether it failed, its text. */
  toolResults(): { tool: string; isError: boolean; text: string }[] {
    return (this.session.messages.filter((m) => m.role === "toolResult") as never[]).map(
      (r: { toolName: string; isError: boolean; content: { text?: string }[] }) => ({
        tool: r.toolName,
        isError: r.isError,
        text: r.content.map((c) => c.text ?? "").join(""),
      }),
    );
  }

  get activeTools(): string[] {
    return this.session.getActiveToolNames();
  }

  lastNotice(): Notice | undefined {
    return this.notices[this.notices.length - 1];
  }

  extensionErrors(): Notice[] {
    return this.notices.filter((n) => n.level === "extension-error");
  }

  async dispose(): Promise<void> {
    await this.session.dispose?.();
    if (this.owned) rmSync(this.root, { recursive: true, force: true });
  }
}

/** `PiHarness.create` for one test file: every harness it made is disposed after each test, newest first. */
export function harnessFactory(): (options?: HarnessOptions) => Promise<PiHarness> {
  const open: PiHarness[] = [];
  afterEach(async () => {
    for (const h of open.splice(0).reverse()) await h.dispose();
  });
  return async (options = {}) => {
    const h = await PiHarness.create(options);
    open.push(h);
    return h;
  };
}

/** Scripted model steps. */
export const { say, call, calls } = scriptedSteps("call");

/** All text the model saw in one context (system prompt + messages). */
export function contextText(context: Context): string {
  const parts: string[] = [context.systemPrompt ?? ""];
  for (const message of context.messages) {
    const content = (message as { content: unknown }).content;
    if (typeof content === "string") parts.push(content);
    else if (Array.isArray(content))
      for (const block of content) parts.push((block as { text?: string }).text ?? JSON.stringify(block));
  }
  return parts.join("\n");
}

/** Plants the publication lock of a live writer on another host (State Flow never takes it over). */
export function holdForeignLock(path: string): void {
  const owner = { pid: 999999, host: "another-host", generation: "other", purpose: "test writer" };
  writeFileSync(path, JSON.stringify({ ...owner, createdAt: new Date().toISOString() }));
}

/**
 * Polls `done` every 50 ms until it holds (asynchronous pushes finish after the run). No bound of its
 * own: how long git takes on a loaded machine decides nothing; the test's timeout ends a real hang.
 */
export async function waitUntil(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 50));
}
