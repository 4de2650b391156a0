// The Pi adapter's controller: turns Pi lifecycle events into machine events, asks the machines
// what to do, and carries out their effects against the state store. It holds data (the cached
// branch runtime, the current run's specification and discarded drafts) but no lifecycle flags:
// whether tools are active, which projection applies, whether an answer may become the response
// — every such question is answered by the episode, resolution, barrier or publication machine.

import type { AgentMessage } from "@earendil-works/pi-agent-core";
import type { ExtensionAPI, ExtensionContext, SessionEntry } from "@earendil-works/pi-coding-agent";
import type { Actor } from "xstate";
import { barrierMachine, inCurrentBatch, toolCallDecision } from "../../machines/barrier.ts";
import {
  episodeMachine,
  episodeStateName,
  isToolsActive,
  projectionMode,
  type EpisodeEffect,
  type EpisodeNoticeCode,
  type SessionStartReason,
} from "../../machines/episode.ts";
import {
  MAX_RESOLUTION_STEERS,
  isResolutionSettled,
  isTerminalEligible,
  resolutionMachine,
  steersUsed,
  type ResolutionEmitted,
} from "../../machines/resolution.ts";
import { selectRestore, type BranchMarker, type PointerCheck, type RestoreResult } from "../../machines/restore.ts";
import { parsePatchSet, type PatchSet } from "../../core/cohort.ts";
import { killPoint } from "../../store/fs/crash-points.ts";
import { StateFlowError } from "../../core/errors.ts";
import { cwdKey, sessionKeyFromFile, sessionKeyFromHeader } from "../../store/layout.ts";
import type { ScopeSelector } from "../../core/scope-state.ts";
import { StateStore, type BranchRuntime, type SessionIdentity } from "../../store/state-store.ts";
import { isStoreError } from "../../store/store-error.ts";
import { findGitExecutable } from "../../store/git/git-runner.ts";
import { openStore } from "../../store/open-store.ts";
import { gitPusher, openPublication, type PublicationDriver } from "../../runtime/publication.ts";
import { headBoundary, readTemporalState, recentTransitions, type TemporalRead } from "../../core/temporal.ts";
import { createFlowActor, type FlowInspection } from "../inspect/inspector.ts";
import { CHECKPOINT_ENTRY, branchMarkers, branchShape, frozenRevision } from "./branch.ts";
import type { StateFlowConfig } from "./config.ts";
import {
  PROTOCOL,
  RESOLUTION_NOTE,
  RUN_ANCHOR,
  STOP_HANDOFF,
  projectContext,
  renderRuntimeContext,
  type ProjectionMode as ContextMode,
} from "./context.ts";
import { Diagnostics } from "./diagnostics.ts";
import { answerText, draftEnding, isAssistant, toolCalls } from "./drafts.ts";
import { compactStatus, renderStatus } from "./status.ts";

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
  /** Environment for git (tests isolate identity and PATH here). */
  env: NodeJS.ProcessEnv;
  inspection: FlowInspection | undefined;
  onRuntime?: (accessor: RuntimeAccessor) => void;
  /** Registers patch_state and read_state with Pi (called once, on first activation). */
  registerTools: () => void;
}

const NOTICES: Record<EpisodeNoticeCode, { text: string; level: "info" | "warning" | "error" }> = {
  "not-enabled": { text: "State Flow is not enabled on this branch; nothing to stop.", level: "info" },
  "already-active": { text: "State Flow is already active on this branch.", level: "info" },
  "stop-refused-unproven": {
    text: "State Flow cannot stop: this branch's provenance is unproven, and stopping would let failed recovery replace existing runtime. Select a valid checkpoint with /tree, then retry.",
    level: "error",
  },
  "start-refused-unproven": {
    text: "State Flow cannot start: this branch's provenance is unproven. Select a valid checkpoint with /tree, then retry.",
    level: "error",
  },
  "start-failed": { text: "State Flow could not initialize its store; see the previous error. Nothing was enabled.", level: "error" },
  "adopted-into-git": {
    text: "State Flow adopted this branch's file-only store into Git: its current state is now a commit, and every later transition is one too.",
    level: "info",
  },
  "adoption-failed": {
    text: "State Flow could not adopt this branch's store into Git (see the previous error); it stays enabled on its unchanged file-only store. Fix the cause and run /state-flow-start again.",
    level: "error",
  },
  "stop-failed": {
    text: "State Flow could not persist the stop (see the previous error); the branch stays enabled. Retry /state-flow-stop once the store is writable.",
    level: "error",
  },
  "restore-lock-busy": {
    text: "State Flow could not restore this branch: the store's publication lock is held. The selected revision is kept; retry /state-flow-start once the other writer is done.",
    level: "warning",
  },
  "restore-unproven": {
    text: "State Flow could not prove this branch's revision (replaced or missing); it stays failed-closed. Select a valid checkpoint with /tree.",
    level: "error",
  },
};

function steerText(attempt: number): string {
  return (
    `[State Flow resolution ${attempt}/${MAX_RESOLUTION_STEERS + 1}] Your previous answer was not accepted: no patch_state with final:true was accepted in this run. ` +
    "Reconcile state with patch_state (include final:true, or send {\"final\":true} alone if nothing changed), then give your complete final answer."
  );
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class StateFlowController {
  readonly episode: Actor<typeof episodeMachine>;
  private readonly barrier: Actor<typeof barrierMachine>;
  private resolution: Actor<typeof resolutionMachine> | null = null;
  private publication: PublicationDriver | null = null;
  private store: StateStore | null = null;
  private runtime: BranchRuntime | null = null;
  private identity: SessionIdentity | null = null;
  private effects: EpisodeEffect[] = [];
  private notices: EpisodeNoticeCode[] = [];
  private resolutionEffects: ResolutionEmitted[] = [];
  private specification = "";
  private readonly discarded = new Set<number>();
  private unavailable: string | null = null;
  private diagnostics: Diagnostics;
  private readonly callArgs = new Map<string, unknown>();
  private ui: ExtensionContext["ui"] | null = null;

  private readonly pi: ExtensionAPI;
  private readonly options: ControllerOptions;
  private toolsRegistered = false;

  constructor(pi: ExtensionAPI, options: ControllerOptions) {
    this.pi = pi;
    this.options = options;
    this.episode = createFlowActor(episodeMachine, { input: { autoStart: options.config.autoStart }, inspection: options.inspection });
    this.episode.on("episode.effect", (e) => this.effects.push(e.effect));
    this.episode.on("episode.notice", (e) => this.notices.push(e.code));
    this.episode.start();
    this.barrier = createFlowActor(barrierMachine, { inspection: options.inspection });
    this.barrier.start();
    this.diagnostics = new Diagnostics(options.agentDir, options.config.logging, options.storeRoot, (m) => this.notify(m, "warning"));
    options.onRuntime?.({
      read: (offset = 0, scope = "effective") => this.read(offset, scope),
      episode: () => episodeStateName(this.episode.getSnapshot()),
      status: () => this.statusText(),
    });
  }

  // ---- Pi lifecycle -------------------------------------------------------------------------

  async sessionStart(reason: SessionStartReason, ctx: ExtensionContext): Promise<void> {
    this.ui = ctx.ui;
    this.identity = this.identityOf(ctx);
    this.runtime = null;
    this.unavailable = null;
    await this.send({ type: "SESSION_START", reason, branch: branchShape(ctx.sessionManager.getBranch()) }, ctx);
  }

  async tree(ctx: ExtensionContext): Promise<void> {
    this.ui = ctx.ui;
    await this.send({ type: "TREE" }, ctx);
  }

  async shutdown(): Promise<void> {
    this.episode.send({ type: "SHUTDOWN" });
    this.resolution?.stop();
    this.publication?.shutdown();
    this.barrier.stop();
    this.options.inspection?.stop();
  }

  async command(which: "start" | "stop", ctx: ExtensionContext): Promise<void> {
    this.ui = ctx.ui;
    if (this.episode.getSnapshot().status !== "active") {
      this.notify("State Flow has shut down for this session runtime; reload or reopen the session first.", "warning");
      return;
    }
    await this.send(which === "start" ? { type: "START", adoptGit: this.gitAdoptable() } : { type: "STOP" }, ctx);
  }

  /** The branch's store is file-only while a git executable is available now (the machine decides what START means). */
  private gitAdoptable(): boolean {
    return this.store?.store.kind === "file" && findGitExecutable(this.options.env) !== null;
  }

  /** before_agent_start: a user-initiated run begins. */
  beforeAgentStart(prompt: string, systemPrompt: string): { systemPrompt: string; message: { customType: string; content: string; display: boolean; details: unknown } } | undefined {
    this.resolution?.stop();
    this.resolution = null;
    this.discarded.clear();
    if (!isToolsActive(this.episode.getSnapshot()) || !this.runtime) return undefined;
    this.specification = prompt;
    this.resolution = createFlowActor(resolutionMachine, { inspection: this.options.inspection });
    this.resolution.on("*", (e) => this.resolutionEffects.push(e as ResolutionEmitted));
    this.resolution.start();
    return {
      systemPrompt: `${systemPrompt}\n\n${PROTOCOL}`,
      message: { customType: RUN_ANCHOR, content: "[State Flow run]", display: false, details: { sessionId: this.identity!.sessionId } },
    };
  }

  /** context: the projection the next inference receives (undefined = Pi's own context). */
  context(messages: AgentMessage[]): AgentMessage[] | undefined {
    const mode = projectionMode(this.episode.getSnapshot());
    if (mode === "ordinary" || mode === "failedClosed" || !this.identity) return undefined;
    if (mode === "passive") {
      return projectContext({ messages, mode: "passive", sessionId: this.identity.sessionId, runtimeContext: "", discardedDrafts: this.discarded });
    }
    if (!this.runtime) return undefined;
    const contextMode: ContextMode = mode === "active" ? "steady" : "bootstrap";
    const view = this.runtime.view;
    const text = renderRuntimeContext({
      specification: this.specification,
      state: readTemporalState(view).state,
      step: headBoundary(view.lineage).step,
      transitions: recentTransitions(view),
      invalidations: [],
      resolutionNote: this.resolutionNote(),
      bootstrap: contextMode === "bootstrap",
    });
    return projectContext({ messages, mode: contextMode, sessionId: this.identity.sessionId, runtimeContext: text, discardedDrafts: this.discarded });
  }

  /** tool_call: the patch_state barrier over the current assistant batch. */
  /** tool_execution_start: remembers arguments so a rejected call can be logged exactly. */
  toolExecutionStart(toolCallId: string, args: unknown): void {
    this.callArgs.set(toolCallId, args);
  }

  toolCall(toolCallId: string, ctx: ExtensionContext): { block: true; reason: string } | undefined {
    if (!isToolsActive(this.episode.getSnapshot())) return undefined;
    // The first call of a new assistant batch: hand the machine the whole batch once.
    if (!inCurrentBatch(this.barrier.getSnapshot(), toolCallId)) {
      const calls = this.currentBatchCalls(ctx.sessionManager.getBranch());
      if (calls) this.barrier.send({ type: "BATCH", calls });
    }
    this.barrier.send({ type: "TOOL_CALL", id: toolCallId });
    const decision = toolCallDecision(this.barrier.getSnapshot(), toolCallId);
    return decision.block ? { block: true, reason: decision.reason } : undefined;
  }

  /** message_end: terminal drafts go to the resolution machine. */
  async messageEnd(message: AgentMessage): Promise<void> {
    if (!this.resolution || !isAssistant(message) || isResolutionSettled(this.resolution.getSnapshot())) return;
    const ending = draftEnding(message);
    if (ending === null) return;
    const eligible = isTerminalEligible(this.resolution.getSnapshot());
    this.resolution.send({ type: "DRAFT", ending, text: answerText(message) });
    const unresolved = (attempt: number) =>
      this.diagnostics.write({ kind: "unresolved-draft", text: answerText(message), stopReason: message.stopReason, attempt, eligible });
    for (const effect of this.takeResolutionEffects()) {
      if (effect.type === "resolution.discardDraft") {
        this.discarded.add(message.timestamp);
      } else if (effect.type === "resolution.steer") {
        unresolved(effect.attempt);
        this.pi.sendMessage(
          { customType: RESOLUTION_NOTE, content: steerText(effect.attempt), display: false, details: { sessionId: this.identity!.sessionId } },
          { deliverAs: "steer", triggerTurn: true },
        );
      } else if (effect.type === "resolution.exhausted") {
        unresolved(effect.attempts);
        this.notify(
          `State Flow: the answer was not accepted after ${effect.attempts} attempts without patch_state final:true. Committed state and enablement are kept; ask again to continue.`,
          "error",
        );
      }
    }
  }

  /** turn_end: closes the barrier batch; an eligible complete answer is committed as response. */
  async turnEnd(ctx: ExtensionContext): Promise<void> {
    this.barrier.send({ type: "BATCH_END" });
    if (!this.resolution || isResolutionSettled(this.resolution.getSnapshot())) return;
    this.resolution.send({ type: "TURN_END" });
    for (const effect of this.takeResolutionEffects()) {
      if (effect.type === "resolution.commitResponse") await this.commitResponse(effect.text, ctx);
    }
  }

  async agentEnd(): Promise<void> {
    if (this.resolution && !isResolutionSettled(this.resolution.getSnapshot())) this.resolution.send({ type: "RUN_ENDED" });
    this.takeResolutionEffects();
    this.publication?.turnEnd();
  }

  toolExecutionEnd(toolCallId: string, toolName: string, isError: boolean, result: unknown): void {
    const args = this.callArgs.get(toolCallId);
    this.callArgs.delete(toolCallId);
    if (toolName !== "patch_state" || !isError) return;
    const text = ((result as { content?: { type: string; text?: string }[] })?.content ?? []).map((c) => c.text ?? "").join("");
    this.diagnostics.write({
      kind: "rejected-patch",
      tool: toolName,
      toolCallId,
      arguments: args,
      error: text,
      attempt: this.resolution ? steersUsed(this.resolution.getSnapshot()) : null,
      eligible: this.resolution ? isTerminalEligible(this.resolution.getSnapshot()) : null,
    });
  }

  // ---- tools ---------------------------------------------------------------------------------

  async patchState(set: PatchSet): Promise<{ text: string; details: Record<string, unknown> }> {
    if (!isToolsActive(this.episode.getSnapshot()) || !this.runtime || !this.store) {
      throw new Error("State Flow is not enabled on this branch; /state-flow-start enables it.");
    }
    const scopes = Object.keys(set.patches);
    if (scopes.length === 0) {
      this.resolution?.send({ type: "FINAL_ONLY" });
      return { text: "Terminal eligibility latched (final:true); no semantic transition. Give your final answer.", details: { final: true, transition: null } };
    }
    try {
      const { runtime, staged } = await this.store.commit(this.runtime, set.patches, `state-flow: patch_state ${scopes.join("+")}`);
      await this.accept(runtime);
      this.resolution?.send({ type: "PATCH_ACCEPTED", final: set.final });
      const step = staged.cohort.transition.step;
      const changed = Object.keys(staged.cohort.records);
      const unchanged = staged.cohort.unchanged.length > 0 ? ` Unchanged and not recorded: ${staged.cohort.unchanged.join(", ")}.` : "";
      const finalNote = set.final ? " Terminal eligibility latched: your next complete answer is accepted." : "";
      return {
        text: `Accepted transition step ${step} (${changed.join(", ")}).${unchanged}${finalNote} state[0] is rebuilt for your next inference; do not restate it.`,
        details: { step, transition: staged.cohort.transition.id, scopes: changed, revision: runtime.pointer.revision, final: set.final },
      };
    } catch (error) {
      this.resolution?.send({ type: "PATCH_REJECTED" });
      throw error;
    }
  }

  readState(offset: number, scope: ScopeSelector): TemporalRead {
    if (!isToolsActive(this.episode.getSnapshot())) throw new Error("State Flow is not enabled on this branch.");
    return this.read(offset, scope);
  }

  read(offset: number, scope: ScopeSelector): TemporalRead {
    if (!this.runtime) throw new StateFlowError("offset-unavailable", "no State Flow runtime is selected on this branch");
    return readTemporalState(this.runtime.view, offset, scope);
  }

  statusText(): string {
    const pending = this.publication?.pending ?? null;
    return renderStatus({
      episode: episodeStateName(this.episode.getSnapshot()),
      toolsActive: isToolsActive(this.episode.getSnapshot()),
      storeRoot: this.options.storeRoot,
      storeKind: this.store?.store.kind ?? "unopened",
      runtime: this.runtime,
      unavailable: this.unavailable,
      publication: !this.publication ? "none" : this.store?.store.kind !== "git" ? "file-only (nothing to publish)" : this.publication.policy,
      pendingTarget: pending?.revision ?? null,
    });
  }

  // ---- machine plumbing ----------------------------------------------------------------------

  private async send(event: Parameters<Actor<typeof episodeMachine>["send"]>[0], ctx: ExtensionContext): Promise<void> {
    this.episode.send(event);
    await this.flush(ctx);
  }

  /** Carries out emitted effects in order; each may feed the machine a result event. */
  private async flush(ctx: ExtensionContext): Promise<void> {
    while (this.effects.length > 0 || this.notices.length > 0) {
      const notice = this.notices.shift();
      if (notice) this.notify(NOTICES[notice].text, NOTICES[notice].level);
      const effect = this.effects.shift();
      if (effect === "initialize-storage") await this.initializeStorage(ctx);
      else if (effect === "select-restore") await this.selectRestore(ctx);
      else if (effect === "freeze-handoff") this.freezeHandoff();
      else if (effect === "persist-disabled") await this.persistDisabled();
    }
    this.syncTools(ctx);
  }

  private async initializeStorage(ctx: ExtensionContext): Promise<void> {
    if (this.episode.getSnapshot().matches({ starting: "adopting" })) return this.adoptIntoGit();
    try {
      const fromPassive = this.episode.getSnapshot().matches({ starting: "fromPassive" });
      const store = await this.openStateStore(true);
      const selected = fromPassive ? await this.frozenRuntime(branchMarkers(ctx.sessionManager.getBranch(), this.identity!.sessionId), store) : null;
      const runtime = await store.start(selected, this.options.config.remotePublication);
      this.unavailable = null;
      // Bind the branch first, then publish: the new driver restores this revision as its
      // unconfirmed intent and pushes it once.
      await this.accept(runtime);
      await this.installPublication(runtime);
      this.episode.send({ type: "STORAGE_READY" });
    } catch (error) {
      this.notify(`State Flow start failed: ${errorMessage(error)}`, "error");
      this.episode.send({ type: "STORAGE_FAILED", error: errorMessage(error) });
    }
  }

  /**
   * Commits the active branch's exact current file cohort into Git (initializing the repository
   * when needed) with a config-only publication, binds the branch to that commit and hands
   * publication to a Git-backed driver. On failure nothing changed in the files and the branch
   * keeps its file-only store.
   */
  private async adoptIntoGit(): Promise<void> {
    const fileStore = this.store;
    try {
      if (!this.runtime) throw new Error("no runtime is selected on this branch");
      const store = await this.openStateStore(true);
      const runtime = await store.start(this.runtime, this.runtime.config.remotePublication);
      // The file-only driver has nothing to publish; the Git-backed one restores this revision
      // as its unconfirmed intent and pushes it once (as after a start).
      this.publication?.shutdown();
      this.publication = null;
      await this.accept(runtime);
      await this.installPublication(runtime);
      this.episode.send({ type: "STORAGE_READY" });
    } catch (error) {
      this.store = fileStore; // a repository opened before the failure is not used until the next start
      this.notify(`State Flow could not adopt the store into Git: ${errorMessage(error)}`, "error");
      this.episode.send({ type: "STORAGE_FAILED", error: errorMessage(error) });
    }
  }

  private async selectRestore(ctx: ExtensionContext): Promise<void> {
    let result: RestoreResult;
    let loaded: BranchRuntime | null = null;
    try {
      const store = await this.openStateStore(false);
      const interrupted = await this.interruptedPublication(ctx, store);
      if (interrupted) {
        this.unavailable = `branch revision ${interrupted.revision} is lockBusy`;
        this.runtime = null;
        this.episode.send({ type: "RESTORE_RESULT", result: interrupted });
        return;
      }
      const markers = branchMarkers(ctx.sessionManager.getBranch(), this.identity!.sessionId);
      const runtimes = new Map<string, BranchRuntime>();
      const failures: string[] = [];
      result = await selectRestore(
        markers,
        (revision) => this.check(store, revision, runtimes, failures),
        this.identity!.sessionId,
      );
      if (result.kind === "revision") loaded = runtimes.get(result.revision)!;
      if (result.kind === "revision" && result.skippedInvalid > 0) {
        this.notifySkipped(loaded!, result.skippedInvalid, failures);
      }
      if (result.kind === "passive") loaded = await this.frozenRuntime(markers, store).catch(() => null);
      if (loaded) await this.installPublication(loaded);
      this.unavailable = result.kind === "unproven" || result.kind === "lockBusy" ? `branch revision ${result.revision ?? "(none valid)"} is ${result.kind}` : null;
    } catch (error) {
      this.unavailable = errorMessage(error);
      result = { kind: "unproven", revision: null, reason: "noValidPointer" };
    }
    this.runtime = loaded;
    this.episode.send({ type: "RESTORE_RESULT", result });
  }

  /**
   * Before a restore: a publisher that died holding the lock is reported with its remedy (the
   * restore retries on /state-flow-start); then a cohort it published but never recorded on
   * this branch is recorded. null = go on restoring.
   */
  private async interruptedPublication(
    ctx: ExtensionContext,
    store: StateStore,
  ): Promise<{ kind: "lockBusy"; revision: string } | null> {
    const markers = branchMarkers(ctx.sessionManager.getBranch(), this.identity!.sessionId);
    const newest = [...markers].reverse().find((m) => m.kind === "revision");
    if (newest?.kind !== "revision") return null; // nothing to restore: no cohort to tell apart
    try {
      await store.assertNoInterruptedPublication();
      await this.recordUnrecordedSuccessor(ctx, store, markers);
    } catch (error) {
      if (!isStoreError(error, "lock-held")) return null; // the branch's own pointer still decides
      this.notify(errorMessage(error), "warning");
      return { kind: "lockBusy", revision: newest.revision };
    }
    return null;
  }

  /**
   * A process killed after the store accepted a cohort but before the branch recorded it: the
   * commit accepted that transition, so the branch records it now (and restores it) instead of
   * restoring the cohort before it next to shared scopes that already hold its changes.
   */
  private async recordUnrecordedSuccessor(
    ctx: ExtensionContext,
    store: StateStore,
    markers: readonly BranchMarker[],
  ): Promise<void> {
    const newest = markers[markers.length - 1];
    if (newest?.kind !== "revision") return;
    const recorded = new Set(
      branchMarkers(ctx.sessionManager.getEntries(), this.identity!.sessionId)
        .flatMap((m) => (m.kind === "revision" ? [m.revision] : [])),
    );
    const successor = await store.unrecordedSuccessor(newest.revision, recorded);
    if (!successor) return;
    const where = `step ${headBoundary(successor.view.lineage).step} (${successor.pointer.revision.slice(0, 17)})`;
    if (!successor.config.enabled) {
      // A durable stop whose branch markers were never written: the stop completes now.
      this.runtime = successor;
      this.freezeHandoff();
      this.notify(
        `State Flow: the stop at ${where} was durable but the session ended before this branch recorded it; ` +
          "it is recorded now.",
        "info",
      );
      return;
    }
    this.pi.appendEntry(CHECKPOINT_ENTRY, { revision: successor.pointer.revision });
    this.notify(
      `State Flow restored ${where}: the store had accepted it, but the session ended before this branch ` +
        "recorded it. The branch records it now.",
      "info",
    );
  }

  /** Names what a restore skipped: newer checkpoints of the branch that could not be loaded. */
  private notifySkipped(runtime: BranchRuntime, skipped: number, failures: readonly string[]): void {
    this.notify(
      `State Flow restored step ${headBoundary(runtime.view.lineage).step} ` +
        `(${runtime.pointer.revision.slice(0, 17)}), not the newest checkpoint of this branch: ${skipped} newer ` +
        `checkpoint entr${skipped === 1 ? "y" : "ies"} could not be loaded` +
        `${failures.length > 0 ? ` (${failures.join("; ")})` : " (malformed)"}. Use /tree to select another point.`,
      "warning",
    );
  }

  /** A runtime revision this session stopped restores the frozen boundary (passive), never plain off. */
  private async check(
    store: StateStore,
    revision: string,
    runtimes: Map<string, BranchRuntime>,
    failures: string[],
  ): Promise<PointerCheck> {
    try {
      const runtime = await store.loadPointer({ revision });
      runtimes.set(revision, runtime);
      return runtime.config.enabled ? "valid" : "stopped";
    } catch (error) {
      if (isStoreError(error, "lock-held")) {
        this.notify(errorMessage(error), "warning");
        return "lockBusy";
      }
      if (isStoreError(error, "pointer-unavailable")) return "unavailable";
      failures.push(`${revision.slice(0, 17)}: ${errorMessage(error)}`);
      return "invalid";
    }
  }

  /** The runtime frozen at stop: the newest valid revision recorded before the disabled marker. */
  private async frozenRuntime(markers: readonly BranchMarker[], store: StateStore): Promise<BranchRuntime | null> {
    if (this.runtime && !this.runtime.config.enabled) return this.runtime;
    const revision = frozenRevision(markers);
    return revision ? store.loadPointer({ revision }) : null;
  }

  /**
   * The frozen exit handoff (effective state at the stop boundary) followed by the branch's
   * disabled marker: together they make this physical session's passive projection durable
   * across reload, resume and /tree, while another session reading the branch sees plain off.
   */
  private freezeHandoff(): void {
    if (!this.identity) return;
    const state = this.runtime ? readTemporalState(this.runtime.view).state : null;
    const content =
      "[State Flow stopped — frozen exit handoff: the effective state at the stop boundary. It is assistant-produced memory, not an instruction.]\n" +
      (state ? JSON.stringify(state, null, 2) : "(no state)");
    this.pi.sendMessage({ customType: STOP_HANDOFF, content, display: false, details: { sessionId: this.identity.sessionId } });
    // The stopped revision follows the handoff on the branch, so any position that holds it also
    // holds the handoff, and a restart (or a restore after /tree) finds that exact boundary.
    if (this.runtime) this.pi.appendEntry(CHECKPOINT_ENTRY, { revision: this.runtime.pointer.revision });
    this.pi.appendEntry(CHECKPOINT_ENTRY, { disabled: true });
  }

  /** Stop is config-only: the disabled runtime revision is published, then the machine learns the outcome. */
  private async persistDisabled(): Promise<void> {
    if (!this.runtime || !this.store) {
      this.episode.send({ type: "STOP_FAILED", error: "no runtime is selected on this branch" });
      return;
    }
    try {
      const runtime = await this.store.publishConfig(this.runtime, { ...this.runtime.config, enabled: false }, "state-flow: stop");
      this.runtime = runtime;
      this.episode.send({ type: "STOP_PERSISTED" });
      this.notify("State Flow stopped: semantic state is kept; tools are off and the frozen handoff stays for this session.", "info");
    } catch (error) {
      this.notify(`State Flow could not persist the stop: ${errorMessage(error)}`, "error");
      this.episode.send({ type: "STOP_FAILED", error: errorMessage(error) });
    }
  }

  /** A new durable revision: bind the branch to it (Pi checkpoint entry) and hand it to publication. */
  private async accept(runtime: BranchRuntime): Promise<void> {
    const changed = runtime.pointer.revision !== this.runtime?.pointer.revision;
    this.runtime = runtime;
    if (changed) {
      killPoint("branch.appending");
      this.pi.appendEntry(CHECKPOINT_ENTRY, { revision: runtime.pointer.revision });
      killPoint("branch.appended");
      await this.publish(runtime.pointer.revision);
    }
    if (this.ui) this.updateStatus(this.ui);
  }

  private async commitResponse(text: string, ctx: ExtensionContext): Promise<void> {
    if (!this.runtime || !this.store) return;
    try {
      const { patches } = parsePatchSet({ session: { response: text } }, { allowResponse: true });
      const { runtime } = await this.store.commit(this.runtime, patches, "state-flow: response", { run: true });
      await this.accept(runtime);
    } catch (error) {
      if (!(error instanceof StateFlowError && error.code === "no-op-cohort")) {
        this.notify(`State Flow could not commit the response: ${errorMessage(error)}`, "error");
        return;
      }
    }
    await this.send({ type: "RUN_ACCEPTED" }, ctx);
  }

  private syncTools(ctx: ExtensionContext): void {
    const active = isToolsActive(this.episode.getSnapshot());
    // Tools are registered on first activation: Pi activates every registered tool, and an
    // unbound or ordinary session must never offer patch_state/read_state to the model.
    if (active && !this.toolsRegistered) {
      this.toolsRegistered = true;
      this.options.registerTools();
    }
    if (!this.toolsRegistered) {
      this.updateStatus(ctx.ui);
      return;
    }
    const current = this.pi.getActiveTools();
    const others = current.filter((name) => !(TOOL_NAMES as readonly string[]).includes(name));
    const next = active ? [...others, ...TOOL_NAMES] : others;
    if (next.length !== current.length || next.some((n, i) => n !== current[i])) this.pi.setActiveTools(next);
    this.updateStatus(ctx.ui);
  }

  /** The compact footer: `state-flow #<step>` while enabled, a word otherwise, nothing when off. */
  private updateStatus(ui: ExtensionContext["ui"]): void {
    const mode = projectionMode(this.episode.getSnapshot());
    if (mode === "ordinary") ui.setStatus("state-flow", undefined);
    else if (mode === "passive") ui.setStatus("state-flow", "state-flow stopped");
    else if (mode === "failedClosed") ui.setStatus("state-flow", "state-flow unavailable");
    else if (this.runtime) ui.setStatus("state-flow", compactStatus(headBoundary(this.runtime.view.lineage).step));
  }

  private resolutionNote(): string | null {
    if (!this.resolution) return null;
    const snapshot = this.resolution.getSnapshot();
    if (isTerminalEligible(snapshot)) return "Terminal eligibility is latched (final:true accepted): your next complete answer becomes the response.";
    const attempts = steersUsed(snapshot);
    return attempts > 0
      ? `${attempts} answer(s) in this run were not accepted. Call patch_state with final:true before your final answer.`
      : "This run is not yet terminal-eligible: call patch_state with final:true (alone if nothing changed) before your final answer.";
  }

  private takeResolutionEffects(): ResolutionEmitted[] {
    return this.resolutionEffects.splice(0);
  }

  /** Tool calls of the newest assistant message on the branch (Pi syncs it before tool_call). */
  private currentBatchCalls(entries: readonly SessionEntry[]): { id: string; name: string }[] | null {
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!;
      if (entry.type !== "message") continue;
      const message = entry.message as AgentMessage;
      if (isAssistant(message)) return toolCalls(message);
    }
    return null;
  }


  // ---- publication --------------------------------------------------------------------------

  /**
   * One driver per runtime generation. The selected revision's intent is "unconfirmed" (it is
   * written inside the accepted commit), so a restored or restarted runtime pushes it again:
   * pending publication survives restart and a push of an already published commit is a no-op.
   */
  private async installPublication(runtime: BranchRuntime): Promise<void> {
    if (this.publication) return;
    const git = this.store?.store.git ?? null;
    this.publication = await openPublication({
      policy: runtime.config.remotePublication,
      pusher: git ? gitPusher(git) : null,
      restored: git ? { revision: runtime.pointer.revision, attempts: 0 } : null,
      onPendingChange: (pending) => {
        if (pending?.lastError) this.notify(`State Flow: push of ${pending.revision.slice(0, 12)} is pending (${pending.lastError}); it is retried later.`, "warning");
      },
      ...(this.options.inspection ? { inspect: this.options.inspection.inspect } : {}),
    });
    if (this.publication.pending) void this.publication.retry();
  }

  private async publish(revision: string): Promise<void> {
    await this.publication?.accepted(revision);
  }

  // ---- helpers -------------------------------------------------------------------------------

  private async openStateStore(initGit: boolean): Promise<StateStore> {
    // (git availability is checked now, not when the store was opened: it may have been installed since)
    if (this.store && (!initGit || this.store.store.kind === "git" || findGitExecutable(this.options.env) === null)) return this.store;
    const store = await openStore({ root: this.options.storeRoot, env: this.options.env, initGit });
    this.store = new StateStore(store, this.identity!);
    return this.store;
  }

  private identityOf(ctx: ExtensionContext): SessionIdentity {
    const manager = ctx.sessionManager;
    const file = manager.getSessionFile();
    const header = manager.getHeader();
    const sessionKey = file ? sessionKeyFromFile(file) : sessionKeyFromHeader(header!);
    return { cwd: ctx.cwd, cwdKey: cwdKey(ctx.cwd), sessionId: manager.getSessionId(), sessionKey };
  }

  private notify(message: string, level: "info" | "warning" | "error"): void {
    this.ui?.notify(message, level);
  }
}
