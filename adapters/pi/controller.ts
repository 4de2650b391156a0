// The Pi adapter's controller: translation only. Pi lifecycle events and `ctx` become calls on the
// Pi-free FlowRuntime (runtime/), and the runtime's answers become Pi return values, branch
// entries, hidden messages, notices, tools and the footer. It decides nothing about the lifecycle:
// the runtime's machines do.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { AgentMessage } from "@earendil-works/pi-agent-core";
import type {
  ExtensionAPI,
  ExtensionCommandContext,
  ExtensionContext,
  SessionEntry,
} from "@earendil-works/pi-coding-agent";
import type { PatchSet } from "../../storage/core/cohort.ts";
import { projectArtifacts } from "../../storage/core/artifacts.ts";
import type { JsonObject } from "../../storage/core/json.ts";
import type { ScopeSelector, ScopeState } from "../../storage/core/scope-state.ts";
import {
  headBoundary,
  readTemporalState,
  recentTransitions,
  type CompactTransition,
  type TemporalRead,
  type TemporalView,
} from "../../storage/core/temporal.ts";
import type { SessionStartReason } from "../../machines/episode-types.ts";
import { MAX_RESOLUTION_STEERS } from "../../machines/resolution.ts";
import { FlowRuntime, type PatchAccepted, type Projection } from "../../runtime/flow-runtime.ts";
import type { InspectCommand } from "../../runtime/inspect.ts";
import type { FlowInspection } from "../../runtime/flow-actor.ts";
import type { BranchHost, CheckpointData, HostView, NoticeLevel } from "../../runtime/host.ts";
import { sessionIdentity } from "../../runtime/session-identity.ts";
import {
  CHECKPOINT_ENTRY,
  DISCARDED_ENTRY,
  branchMarkers,
  branchShape,
  checkpointEntryOf,
  discardedDrafts,
  recordedRevisions,
  selectedMarkers,
} from "./branch.ts";
import type { StateFlowConfig } from "./config.ts";
import { forkedAt, parentIdentity } from "./parent-session.ts";
import {
  PROTOCOL,
  RESOLUTION_NOTE,
  RUN_ANCHOR,
  RUN_ANCHOR_TEXT,
  STOP_HANDOFF,
  closedRunOnly,
  hasPreFlowContext,
  projectContext,
  renderRuntimeContextParts,
  withoutOwnMessages,
  type RuntimeContextParts,
} from "./context.ts";
import { REQUESTS_ENTRY, carriedOnBranch, sameCarried } from "./carried-requests.ts";
import { dropLoneSkillOption, withoutLoneSkillListing, type FormatSkills, type ListedSkill } from "./skill-listing.ts";
import { withStableBreakpoint } from "./cache-breakpoints.ts";
import { partitionAtRunStart, partitionInRun, recentAtRunStart, recentlyChanged } from "./stability.ts";
import type { Partition, PathTrie, RunPartition } from "./stability.ts";
import { answerText, draftEnding, isAssistant, toolCalls } from "./drafts.ts";
import { piVersionWarning, runTriggerOf, withImages, type BeforeAgentStartFields } from "./pi-versions.ts";

export const TOOL_NAMES = ["patch_state", "read_state"] as const;

export interface RuntimeAccessor {
  /** Lazy temporal read from the cached runtime: no publication, no history step. */
  read(offset?: number, scope?: ScopeSelector): TemporalRead;
  /** Flat episode state, e.g. "active.steady". */
  episode(): string;
  /** The detailed status report. */
  status(): string;
}

export interface ControllerOptions {
  agentDir: string;
  config: StateFlowConfig;
  /** Store root override (SDK `repositoryRoot`); default from state-flow.json. */
  storeRoot: string;
  /** Knowledge source root (SDK `knowledgeRoot`; default `<agentDir>/knowledge`). */
  knowledgeRoot: string;
  /** Environment for git (tests isolate identity and PATH here). */
  env: NodeJS.ProcessEnv;
  inspection: FlowInspection | undefined;
  onRuntime?: (accessor: RuntimeAccessor) => void;
  /** The running Pi's version (warned about once when State Flow does not support it). */
  piVersion?: string;
  /** How the running Pi renders its skill listing (PiHost.formatSkills); absent: the listing is left alone. */
  formatSkills?: FormatSkills;
  /** Which form of the package Pi loaded (state-flow.ts, package-form.ts); said at the end of /state-flow-status. */
  loadedFrom?: string;
  /** Registers patch_state and read_state with Pi (asked once, on first activation). */
  registerTools: () => void;
}

type RunMessage = { customType: string; content: string; display: boolean; details: unknown };
type RunStart = { systemPrompt: string; message?: RunMessage };

function steerText(attempt: number): string {
  return (
    `[State Flow resolution ${attempt}/${MAX_RESOLUTION_STEERS + 1}] Your previous answer was not accepted: ` +
    "no patch_state with final:true was accepted in this run. Reconcile state with patch_state (include " +
    'final:true, or send {"final":true} alone if nothing changed), then give your complete final answer.'
  );
}

function handoffText(state: ScopeState | null): string {
  return (
    "[State Flow stopped — frozen exit handoff: the effective state at the stop boundary. It is " +
    "assistant-produced memory, not an instruction.]\n" +
    (state ? JSON.stringify(state, null, 2) : "(no state)")
  );
}

function resolutionNote(resolution: { eligible: boolean; steers: number } | null): string | null {
  if (!resolution) return null;
  if (resolution.eligible) {
    return "Terminal eligibility is latched (final:true accepted): your next complete answer becomes the response.";
  }
  return resolution.steers > 0
    ? `${resolution.steers} answer(s) in this run were not accepted. ` +
        "Call patch_state with final:true before your final answer."
    : "This run is not yet terminal-eligible: call patch_state with final:true (alone if nothing changed) " +
        "before your final answer.";
}

/** The footer as 001 draws it: an accent `state-flow` and the dim detail (plain where the UI has no theme). */
export function footerText(ui: ExtensionContext["ui"], detail: string): string {
  const theme = (ui as { theme?: { fg(color: string, text: string): string } }).theme;
  return theme ? `${theme.fg("accent", "state-flow")} ${theme.fg("dim", detail)}` : `state-flow ${detail}`;
}

/** The absolute path Pi's read tool resolved (`@` stripped, `~` expanded, relative to the cwd). */
function readPath(args: unknown, cwd: string | undefined): string | null {
  const raw = (args as { path?: unknown } | undefined)?.path;
  if (typeof raw !== "string" || raw === "" || !cwd) return null;
  const path = raw.startsWith("@") ? raw.slice(1) : raw;
  if (path === "~" || path.startsWith("~/")) return join(homedir(), path.slice(1));
  return resolve(cwd, path);
}

/** The effective state as the model sees it: runtime-owned provenance stripped from artifacts. */
function modelState(state: ScopeState): ScopeState {
  return { ...state, artifacts: projectArtifacts(state.artifacts as JsonObject) as ScopeState["artifacts"] };
}

function userText(message: AgentMessage): string {
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const text = content
    .flatMap((block) => (block?.type === "text" && typeof block.text === "string" ? [block.text] : []))
    .join("\n");
  return withImages(text, content.filter((block) => block?.type === "image").length);
}

/** What the runtime context keeps of a run's start: its view, and the paths then volatile. */
interface RunBase extends RunPartition {
  view: TemporalView;
  transitions: CompactTransition[];
}

/** Tool calls of the newest assistant message on the branch (Pi syncs it before tool_call). */
function newestBatch(manager: ExtensionContext["sessionManager"]): { id: string; name: string }[] | null {
  // From the leaf up, not getBranch(): that copies the whole root-to-leaf path on every tool call.
  const parent = (entry: SessionEntry) => (entry.parentId === null ? undefined : manager.getEntry(entry.parentId));
  for (let entry = manager.getLeafEntry(); entry !== undefined; entry = parent(entry)) {
    if (entry.type !== "message") continue;
    const message = entry.message as AgentMessage;
    if (isAssistant(message)) return toolCalls(message);
  }
  return null;
}

export class StateFlowController {
  readonly runtime: FlowRuntime;
  private readonly pi: ExtensionAPI;
  private readonly options: ControllerOptions;
  private ctx: ExtensionContext | null = null;
  private sessionId = "";
  private readonly callArgs = new Map<string, unknown>();
  /** The finalized (mutable) tool_call input per call: what a read really executed. */
  private readonly callInput = new Map<string, unknown>();
  private versionWarned = false;
  /** When Pi forked this session (its entries before then were copied from the parent); undefined: no fork. */
  private forkedAt: string | undefined;
  private readonly modelStates = new WeakMap<TemporalView, ScopeState>();
  /** The open run's start, as its runtime context keeps it (null: taken at the run's first context). */
  private runBase: RunBase | null = null;
  /** The partition of the newest runtime context, per lineage (see runBaseFor). */
  private partition: { lineage: string; partition: Partition } | null = null;
  /** The newest runtime context sent, for the cache breakpoint at the end of its stable part. */
  private sent: RuntimeContextParts | null = null;
  /** The last sync asked for State Flow's tools (Pi drops names an allowlist leaves out, silently). */
  private toolsWanted = false;
  /**
   * The UI of the newest event, captured then: Pi marks an event's `ctx` stale once the session is
   * replaced or disposed, and a late push result still reports through the UI it had.
   */
  private ui: { ui: ExtensionContext["ui"]; hasUI: boolean; batch: boolean } | null = null;

  constructor(pi: ExtensionAPI, options: ControllerOptions) {
    this.pi = pi;
    this.options = options;
    this.runtime = new FlowRuntime(this.host(), {
      storeRoot: options.storeRoot,
      knowledgeRoot: options.knowledgeRoot,
      env: options.env,
      autoStart: options.config.autoStart,
      remotePublication: options.config.remotePublication,
      diagnostics: { agentDir: options.agentDir, enabled: options.config.logging },
      inspection: options.inspection,
    });
    options.onRuntime?.({
      read: (offset = 0, scope = "effective") => this.runtime.read(offset, scope),
      episode: () => this.runtime.episodeName(),
      status: () => this.runtime.status(),
    });
  }

  /** The runtime's view of Pi: the branch of the newest event's `ctx`, entries, messages, the UI. */
  private host(): BranchHost {
    const manager = () => this.ctx!.sessionManager;
    return {
      markers: () => selectedMarkers(manager().getBranch(), manager().getEntries(), this.sessionId, this.forkedAt),
      parentSession: () => parentIdentity(manager().getHeader()),
      recordedRevisions: () =>
        new Set(
          branchMarkers(manager().getEntries(), this.sessionId).flatMap((m) =>
            m.kind === "revision" ? [m.revision] : [],
          ),
        ),
      appendCheckpoint: (data: CheckpointData) => this.pi.appendEntry(CHECKPOINT_ENTRY, data),
      sendHandoff: (state) => this.hidden(STOP_HANDOFF, handoffText(state)),
      steer: (attempt) => this.hidden(RESOLUTION_NOTE, steerText(attempt), { deliverAs: "steer", triggerTurn: true }),
      recordDiscarded: (timestamp) => this.pi.appendEntry(DISCARDED_ENTRY, { timestamp, sessionId: this.sessionId }),
      carriedRequests: () => carriedOnBranch(manager().getBranch(), this.sessionId),
      recordCarried: (carried) => {
        if (sameCarried(carried, carriedOnBranch(manager().getBranch(), this.sessionId))) return;
        this.pi.appendEntry(REQUESTS_ENTRY, { ...carried, sessionId: this.sessionId });
      },
      notify: (message: string, level: NoticeLevel) => this.notify(message, level),
      registerTools: () => this.options.registerTools(),
      sync: (view) => this.sync(view),
      missingTools: () => {
        if (!this.toolsWanted) return [];
        const active = new Set(this.pi.getActiveTools());
        return TOOL_NAMES.filter((name) => !active.has(name));
      },
    };
  }

  private hidden(customType: string, content: string, options?: { deliverAs: "steer"; triggerTurn: true }): void {
    const message = { customType, content, display: false, details: { sessionId: this.sessionId } };
    if (options) this.pi.sendMessage(message, options);
    else this.pi.sendMessage(message);
  }

  /**
   * Print and JSON modes have no UI (Pi's notify is a no-op there): notices go to stderr instead,
   * and an error (a start that failed, an answer refused after every retry) makes the process exit
   * 1, as Pi's own print mode does for a failed request. Pi sets a non-zero exit code only when it
   * has one of its own, so State Flow's survives.
   */
  private bind(ctx: ExtensionContext): void {
    this.ctx = ctx;
    this.ui = { ui: ctx.ui, hasUI: ctx.hasUI, batch: ctx.mode === "print" || ctx.mode === "json" };
  }

  private notify(message: string, level: NoticeLevel): void {
    if (!this.ui) return;
    if (this.ui.hasUI) this.ui.ui.notify(message, level);
    else process.stderr.write(`[state-flow] ${level}: ${message}\n`);
    if (level === "error" && this.ui.batch) process.exitCode = 1;
  }

  private sync(view: HostView): void {
    this.toolsWanted = view.toolsActive && view.toolsRegistered;
    if (view.toolsRegistered) {
      const current = this.pi.getActiveTools();
      const others = current.filter((name) => !(TOOL_NAMES as readonly string[]).includes(name));
      const next = view.toolsActive ? [...others, ...TOOL_NAMES] : others;
      if (next.length !== current.length || next.some((n, i) => n !== current[i])) this.pi.setActiveTools(next);
    }
    this.ui?.ui.setStatus("state-flow", view.footer && footerText(this.ui.ui, view.footer.detail));
  }

  // ---- Pi lifecycle -------------------------------------------------------------------------

  async sessionStart(reason: SessionStartReason, ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    const versionWarning = this.options.piVersion ? piVersionWarning(this.options.piVersion) : null;
    if (versionWarning && !this.versionWarned) this.notify(versionWarning, "warning");
    this.versionWarned = true;
    const identity = sessionIdentity(ctx.cwd, ctx.sessionManager);
    this.sessionId = identity.sessionId;
    // An unsaved session's fork names no parent file: only the reason says its entries were copied.
    const header = ctx.sessionManager.getHeader();
    this.forkedAt = forkedAt(header) ?? (reason === "fork" && header ? header.timestamp : undefined);
    await this.runtime.sessionStart(reason, identity, branchShape(ctx.sessionManager.getBranch()));
  }

  async tree(ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    await this.runtime.tree();
  }

  /**
   * session_shutdown. Pi writes a session's file only once it holds a conversation (0.84.4
   * session-manager.js _persist: an assistant message; 1.6.0: a user or assistant message), and an
   * in-memory session never: one that ends so (anything but a reload, which keeps it) can never be resumed.
   */
  async shutdown(reason: string, ctx: ExtensionContext): Promise<void> {
    const file = ctx.sessionManager.getSessionFile();
    await this.runtime.shutdown(reason !== "reload" && !(file && existsSync(file)));
  }

  async command(which: "start" | "stop", ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    await this.runtime.command(which);
  }

  /** before_agent_start: a run begins (a user prompt; in Pi 1.x also a custom message's triggerTurn). */
  beforeAgentStart(event: BeforeAgentStartFields, renderedPrompt: () => string): RunStart | undefined {
    const trigger = runTriggerOf(event);
    const skills = event.systemPromptOptions?.skills;
    dropLoneSkillOption(event.systemPromptOptions as { skills?: readonly ListedSkill[] } | undefined);
    const systemPrompt = renderedPrompt();
    const prompt = withoutLoneSkillListing(systemPrompt, skills, this.options.formatSkills);
    this.runBase = null;
    if (!this.runtime.runAnnounced(trigger)) return prompt === systemPrompt ? undefined : { systemPrompt: prompt };
    return { systemPrompt: `${prompt}\n\n${PROTOCOL}`, message: this.runAnchor() };
  }

  /** agent_start: a run's continuation, or a run no before_agent_start opened (see pi-versions.ts). */
  agentStart(): void {
    const opened = this.runtime.agentStart();
    if (!opened) return;
    this.runBase = null;
    this.pi.sendMessage(this.runAnchor(), { deliverAs: "steer" });
  }

  /** agent_settled: the run is over, with every retry and queued message Pi ran in it. */
  agentSettled(): void {
    this.runtime.runEnded();
  }

  private runAnchor(): RunMessage {
    return {
      customType: RUN_ANCHOR,
      content: RUN_ANCHOR_TEXT,
      display: false,
      details: { sessionId: this.sessionId },
    };
  }

  /** input: a failed-closed branch runs no prompt; it says why and what to do instead. */
  input(): { action: "handled" } | { action: "continue" } {
    const refusal = this.runtime.inputRefusal();
    if (!refusal) return { action: "continue" };
    this.notify(refusal, "error");
    return { action: "handled" };
  }

  /** Before the first context of a run: the run is prepared (shared state adopted, Knowledge discovered). */
  prepareContext(): Promise<void> {
    return this.runtime.prepared();
  }

  /** context: the projection the next inference receives (undefined = Pi's own context). */
  context(messages: AgentMessage[]): AgentMessage[] | undefined {
    const projection: Projection = this.runtime.projection();
    this.sent = null;
    // Where State Flow is not projecting, the drafts discarded on this branch are read from its entries.
    const recorded = () => (this.ctx ? discardedDrafts(this.ctx.sessionManager.getBranch()) : new Set<number>());
    if (projection.mode === "ordinary") return withoutOwnMessages(messages, recorded()) ?? undefined;
    if (projection.mode === "closed") return closedRunOnly(messages, recorded());
    const { sessionId, discarded } = projection;
    if (projection.mode === "passive") {
      return projectContext({ messages, mode: "passive", sessionId, runtimeContext: "", discardedDrafts: discarded });
    }
    const { view } = projection;
    const base = this.runBaseFor(view);
    const state = this.modelStateOf(view);
    const baseStep = headBoundary(base.view.lineage).step;
    const parts = renderRuntimeContextParts({
      specification: projection.specification,
      freshness: projection.freshness,
      state,
      volatile: this.volatilePaths(base, view, state),
      step: headBoundary(view.lineage).step,
      transitions: base.transitions,
      runTransitions: view === base.view ? [] : recentTransitions(view).filter((t) => t.step > baseStep),
      invalidations: projection.invalidations,
      resolutionNote: resolutionNote(projection.resolution),
      bootstrap: projection.mode === "bootstrap" && hasPreFlowContext(messages, sessionId),
    });
    this.sent = parts;
    return projectContext({
      messages,
      mode: projection.mode,
      sessionId,
      runtimeContext: parts,
      discardedDrafts: discarded,
    });
  }

  /**
   * The open run's start: taken at its first context. A view of another lineage (a restore, a
   * start) begins a new base, as does an older head (a branch switched under the run).
   */
  private runBaseFor(view: TemporalView): RunBase {
    const base = this.runBase;
    const head = headBoundary(view.lineage).step;
    if (base && base.view.lineage.id === view.lineage.id && headBoundary(base.view.lineage).step <= head) return base;
    const state = this.modelStateOf(view);
    const previous = this.partition?.lineage === view.lineage.id ? this.partition.partition : null;
    const recent = recentAtRunStart(state, previous, () => recentlyChanged(view));
    const start = partitionAtRunStart(state, recent, previous);
    this.partition = { lineage: view.lineage.id, partition: start };
    this.runBase = { view, state, transitions: recentTransitions(view), recent, start };
    return this.runBase;
  }

  /** The volatile paths: those of the run's start, and what the run has changed since (stability.ts). */
  private volatilePaths(base: RunBase, view: TemporalView, state: ScopeState): PathTrie {
    if (view === base.view) return base.start.volatile;
    const partition = partitionInRun(base, state);
    this.partition = { lineage: view.lineage.id, partition };
    return partition.volatile;
  }

  /** before_provider_request: a cache breakpoint at the end of the runtime context's stable part. */
  providerRequest(payload: unknown): unknown {
    if (!this.sent) return undefined;
    return withStableBreakpoint(payload, this.sent.stable, this.sent.volatile);
  }

  /**
   * The state the model sees for a view, built once per view: views are never changed in place,
   * and the inferences of a run share one until a patch is accepted (a 128 KiB state costs
   * milliseconds to read out and render).
   */
  private modelStateOf(view: TemporalView): ScopeState {
    let state = this.modelStates.get(view);
    if (state === undefined) this.modelStates.set(view, (state = modelState(readTemporalState(view).state)));
    return state;
  }

  /** tool_execution_start: remembers arguments so a refused call can be logged exactly. */
  toolExecutionStart(toolCallId: string, args: unknown): void {
    this.callArgs.set(toolCallId, args);
  }

  /** tool_call: the patch_state barrier over the current assistant batch. */
  toolCall(toolCallId: string, ctx: ExtensionContext, input?: unknown): { block: true; reason: string } | undefined {
    // Kept by reference: extensions after State Flow may still mutate it, and what runs is the final object.
    if (input !== undefined) this.callInput.set(toolCallId, input);
    const decision = this.runtime.toolCall(toolCallId, () => newestBatch(ctx.sessionManager));
    return decision.block ? { block: true, reason: decision.reason } : undefined;
  }

  /** message_end: terminal drafts go to the run's resolution; user messages inside a run, to its specification. */
  async messageEnd(message: AgentMessage): Promise<void> {
    if (message.role === "user") return this.runtime.userMessage(userText(message));
    if (message.role === "custom") this.runtime.customMessage(message.customType, message.customType === RUN_ANCHOR);
    if (!isAssistant(message)) return;
    const ending = draftEnding(message);
    if (ending === null) return;
    this.runtime.draft({ id: message.timestamp, ending, text: answerText(message), stopReason: message.stopReason });
  }

  async turnEnd(ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    await this.runtime.turnEnd();
  }

  toolExecutionEnd(toolCallId: string, toolName: string, isError: boolean, result: unknown): void {
    const args = this.callArgs.get(toolCallId);
    const input = this.callInput.get(toolCallId) ?? args;
    this.callArgs.delete(toolCallId);
    this.callInput.delete(toolCallId);
    if (toolName === "read" && !isError) {
      const path = readPath(input, this.ctx?.cwd);
      if (path) this.runtime.sourceRead(path);
      return;
    }
    if (toolName !== "patch_state" || !isError) return;
    const content = (result as { content?: { type: string; text?: string }[] })?.content ?? [];
    const error = content.map((c) => c.text ?? "").join("");
    this.runtime.patchRefused({ tool: toolName, toolCallId, arguments: args, error });
  }

  // ---- tools ---------------------------------------------------------------------------------

  patchState(set: PatchSet): Promise<PatchAccepted> {
    return this.runtime.patchState(set);
  }

  readState(offset: number, scope: ScopeSelector): TemporalRead {
    return this.runtime.readState(offset, scope);
  }

  statusText(): string {
    return this.runtime.status();
  }

  /**
   * /state-flow-status: the report where the person looks — the UI (TUI, and RPC's notify), else
   * stderr: in print and JSON modes Pi keeps stdout for its own output (it routes an extension's
   * stdout writes to stderr too: pi-coding-agent core/output-guard.js, takeOverStdout).
   */
  showStatus(ctx: ExtensionContext): void {
    this.bind(ctx);
    const loaded = this.options.loadedFrom;
    const text = this.runtime.status() + (loaded ? `\n\nPackage\n  State Flow loaded from ${loaded}` : "");
    if (ctx.hasUI) ctx.ui.notify(text, "info");
    else process.stderr.write(`${text}\n`);
  }

  /**
   * /state-flow-fork <offset|id>: Pi's own fork at the checkpoint that recorded that boundary (a new
   * session file holding the branch up to it); the new session's start then copies the session state
   * there (the restore's fork result). What is wrong with the argument is said where status is.
   */
  async fork(args: string, ctx: ExtensionCommandContext): Promise<void> {
    this.bind(ctx);
    const manager = ctx.sessionManager;
    const target = await this.runtime.forkTarget(args, recordedRevisions(manager.getBranch(), manager.getEntries()));
    const refuse = (text: string) => (ctx.hasUI ? ctx.ui.notify(text, "warning") : process.stderr.write(`${text}\n`));
    if ("refusal" in target) return void refuse(target.refusal);
    const { id, step } = target.boundary;
    const entry = checkpointEntryOf(manager.getBranch(), manager.getEntries(), id);
    if (!entry) {
      return void refuse(
        `Step ${step} (${id.slice(0, 10)}) was recorded on this branch by an older State Flow version, which did ` +
          "not note its step: /state-flow-fork cannot find where it is. Pi's /fork at the message after it makes " +
          "the same fork.",
      );
    }
    const forked = await ctx.fork(entry.id, { position: "at" });
    if (forked.cancelled)
      refuse("The fork was cancelled (by another extension's session_before_fork): nothing changed.");
  }

  /** /state-flow-sync [keep-local|take-remote|re-apply [scope]]: shown where status is, a refusal as a warning. */
  async syncCommand(args: string, ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    const { text, refused } = await this.runtime.sync(args);
    if (ctx.hasUI) ctx.ui.notify(text, refused ? "warning" : "info");
    else process.stderr.write(`${text}\n`);
  }

  /** /state-flow-refresh [source|all], answered where status is; a refusal as a warning. */
  async refreshKnowledge(args: string, ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    const { text, refused } = await this.runtime.refreshKnowledge(args);
    if (ctx.hasUI) ctx.ui.notify(text, refused ? "warning" : "info");
    else process.stderr.write(`${text}\n`);
  }

  /**
   * /state-flow-show, -history and -diff, shown where status is; a refusal as a warning. The
   * selected branch's recorded revisions (with Pi's timestamps) are where older boundaries are read.
   */
  async showInspection(command: InspectCommand, args: string, ctx: ExtensionContext): Promise<void> {
    this.bind(ctx);
    const manager = ctx.sessionManager;
    const recorded = recordedRevisions(manager.getBranch(), manager.getEntries());
    const { text, refused } = await this.runtime.inspect(command, args, recorded);
    if (ctx.hasUI) ctx.ui.notify(text, refused ? "warning" : "info");
    else process.stderr.write(`${text}\n`);
  }
}
