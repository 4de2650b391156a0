// The Pi-free runtime of one branch, as a facade over its one actor system: the episode, which
// invokes its start, adopt, restore and stop actors and spawns the patch_state barrier, each store
// generation's publication and one run actor per Pi run (which invokes a resolution per answer and
// its Knowledge discovery). It supplies those actors' implementations (the branch binding, the run
// session, the Knowledge upkeep, publication), turns host calls into events, and answers the host's
// synchronous questions from snapshots. The host (the Pi adapter) implements `BranchHost`; every
// lifecycle question is the machines' to answer.

import { fromPromise, waitFor, type Actor } from "xstate";
import type { PatchSet } from "../storage/core/cohort.ts";
import type { ScopeSelector } from "../storage/core/scope-state.ts";
import { headBoundary, type TemporalRead, type TemporalView } from "../storage/core/temporal.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { projectArtifacts } from "../storage/core/artifacts.ts";
import { inCurrentBatch, toolCallDecision, type BarrierDecision, type ToolCallRef } from "../machines/barrier.ts";
import { episodeMachine } from "../machines/episode.ts";
import { type EpisodeEvent, type SessionStartReason, type BranchShape } from "../machines/episode-types.ts";
import {
  branchBarrier,
  branchPublication,
  episodeStateName,
  isToolsActive,
  isToolsRegistered,
  projectionMode,
  retainedPointer,
} from "../machines/episode-queries.ts";
import type { ForkCopy, SessionIdentity } from "../storage/state-store.ts";
import { BranchBinding, episodeCell } from "./branch-binding.ts";
import { Diagnostics, type DiagnosticRecord } from "./diagnostics.ts";
import { EpisodeActors } from "./episode-actors.ts";
import type { BranchHost } from "./host.ts";
import type { Invalidations } from "./knowledge-run.ts";
import { KnowledgeUpkeep } from "./knowledge-upkeep.ts";
import { episodeNotices, inputRefusedNotice, startedNotice } from "./notices.ts";
import { BranchPublication } from "./branch-publication.ts";
import type { PublicationPolicy } from "./publication.ts";
import { runSyncCommand, type SyncAnswer } from "./sync-command.ts";
import { RunSession, type Draft, type PatchAccepted } from "./run-session.ts";
import { compactStatus, renderStatus } from "./status.ts";
import { INSPECT_COMMANDS, forkTarget, type ForkTarget, type InspectAnswer, type InspectCommand } from "./inspect.ts";
import type { RecordedRevision } from "./boundaries.ts";
import { createFlowActor, type FlowInspection } from "./flow-actor.ts";
import { carriedRequests, type RunTrigger, type Specification } from "../machines/specification.ts";
import { StateFlowError, errorMessage } from "../storage/core/errors.ts";
import type { Freshness } from "../machines/run.ts";

export type { Draft, PatchAccepted } from "./run-session.ts";

export interface FlowRuntimeOptions {
  /** Store root (SDK `repositoryRoot`, else state-flow.json's directory). */
  storeRoot: string;
  /** Knowledge source root: the Markdown discovered before each enabled run's first inference. */
  knowledgeRoot: string;
  /** Environment for git (tests isolate identity and PATH here). */
  env: NodeJS.ProcessEnv;
  autoStart: boolean;
  remotePublication: PublicationPolicy;
  diagnostics: { agentDir: string; enabled: boolean };
  inspection: FlowInspection | undefined;
}

/** What the next inference is built from; the host renders it. */
export type Projection =
  | { mode: "ordinary" }
  /** Failed closed: no earlier transcript, only the run that started anyway (input is refused). */
  | { mode: "closed" }
  | { mode: "passive"; sessionId: string; discarded: ReadonlySet<number> }
  | {
      mode: "steady" | "bootstrap";
      sessionId: string;
      discarded: ReadonlySet<number>;
      specification: Specification;
      /** What the run's shared-state check found (what other sessions changed since this branch's last run). */
      freshness: Freshness;
      view: TemporalView;
      /** The run's artifact_invalidations plan, or why it is unavailable (never a falsely clean list). */
      invalidations: Invalidations;
      resolution: { eligible: boolean; steers: number } | null;
    };

/** How long a push at work may finish when the session ends (STATE_FLOW_SHUTDOWN_PUSH_MS overrides it). */
const SHUTDOWN_PUSH_MS = 3_000;
function shutdownPushGrace(env: NodeJS.ProcessEnv): number {
  const set = Number(env.STATE_FLOW_SHUTDOWN_PUSH_MS);
  return Number.isFinite(set) && set >= 0 ? set : SHUTDOWN_PUSH_MS;
}

export class FlowRuntime {
  readonly episode: Actor<typeof episodeMachine>;
  private readonly host: BranchHost;
  private readonly options: FlowRuntimeOptions;
  private readonly publication: BranchPublication;
  private readonly binding: BranchBinding;
  private readonly knowledge: KnowledgeUpkeep;
  private readonly run: RunSession;

  constructor(host: BranchHost, options: FlowRuntimeOptions) {
    this.host = host;
    this.options = options;
    const { agentDir, enabled } = options.diagnostics;
    const diagnostics = new Diagnostics(agentDir, enabled, options.storeRoot, (m) => host.notify(m, "warning"));
    // Each store generation's publication is spawned into the episode: one actor system for the branch.
    this.publication = new BranchPublication(
      (m, level) => host.notify(m, level ?? "warning"),
      undefined,
      (logic, input) => {
        this.episode.send({ type: "PUBLICATION_OPENED", logic, input });
        const spawned = branchPublication(this.episode.getSnapshot());
        if (!spawned) throw new Error("State Flow could not open the branch's publication (the episode is closed)");
        return spawned;
      },
    );
    this.binding = new BranchBinding(
      host,
      options,
      this.publication,
      () => this.knowledge.run?.published(),
      episodeCell(() => this.episode),
    );
    this.knowledge = new KnowledgeUpkeep(this.binding, host, options.knowledgeRoot);
    this.run = new RunSession(() => this.episode, this.binding, this.knowledge, host, diagnostics);
    const effects = new EpisodeActors(this.binding, host, this.publication, this.knowledge, options.remotePublication);
    // The episode's I/O: each actor's success or failure is the machine's transition to take.
    const machine = episodeMachine.provide({
      actors: {
        run: this.run.machine(),
        startStorage: fromPromise(({ input }) => effects.startStorage(input.fromFrozen)),
        startFork: fromPromise(({ input }) => effects.startFork(input.copy as ForkCopy)),
        adoptGit: fromPromise(() => effects.adoptIntoGit()),
        selectRestore: fromPromise(() => effects.selectRestore()),
        persistStop: fromPromise(() => effects.persistStop()),
        discardUnsaved: fromPromise(() => effects.discardUnsaved()),
      },
      actions: {
        registerTools: () => this.host.registerTools(),
        freezeHandoff: () => effects.freezeHandoff(),
        recordCarried: ({ event }) => {
          if (event.type !== "xstate.done.actor.run") return;
          try {
            this.host.recordCarried(carriedRequests(event.output.specification));
          } catch (error) {
            this.host.notify(`State Flow could not record the interrupted requests: ${errorMessage(error)}`, "warning");
          }
        },
      },
    });
    this.episode = createFlowActor(machine, {
      input: { autoStart: options.autoStart },
      inspection: options.inspection,
    });
    this.episode.on("episode.notice", ({ code, detail }) => {
      if (code === "started") return this.host.notify(startedNotice(this.storeDescription()), "info");
      for (const { text, level } of episodeNotices(code, detail)) this.host.notify(text, level);
    });
    this.episode.start();
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  async sessionStart(reason: SessionStartReason, identity: SessionIdentity, branch: BranchShape): Promise<void> {
    await this.send({ type: "SESSION_START", reason, branch, identity, carried: this.host.carriedRequests() });
  }

  async tree(): Promise<void> {
    await this.send({ type: "TREE", carried: this.host.carriedRequests() });
  }

  async command(which: "start" | "stop"): Promise<void> {
    if (this.episode.getSnapshot().status !== "active") {
      this.host.notify(
        "State Flow has shut down for this session runtime; reload or reopen the session first.",
        "warning",
      );
      return;
    }
    await this.send(which === "start" ? { type: "START", adoptGit: this.binding.gitAdoptable() } : { type: "STOP" });
  }

  /**
   * session_shutdown (`unsaved`: Pi never saved the session and it does not go on). A push at work gets a
   * few seconds to finish; publication is then fenced (its pushes stop, what stays pending is kept); closing
   * the episode then stops every child of the branch's actor system. An unsaved branch closes once its empty
   * start is removed (`discarding`): resolved only then, so the removal is committed before Pi, which awaits
   * session_shutdown, disposes the session.
   */
  async shutdown(unsaved = false): Promise<void> {
    const finishing = this.publication.pushFinishing(shutdownPushGrace(this.options.env));
    if (finishing) await finishing;
    this.publication.shutdown();
    this.episode.send({ type: "SHUTDOWN", unsaved });
    if (this.episode.getSnapshot().status === "active") await waitFor(this.episode, (s) => s.status !== "active");
    this.options.inspection?.stop();
  }

  // ---- the run --------------------------------------------------------------------------------

  /**
   * before_agent_start: Pi begins a run (a user prompt, or a message another extension sent with
   * triggerTurn); true when the run is equipped (the host then adds the protocol and anchor).
   */
  runAnnounced(trigger: RunTrigger): boolean {
    return this.run.announced(trigger);
  }

  /** agent_start: true when it began an equipped run no before_agent_start announced (the host sends the anchor). */
  agentStart(): boolean {
    return this.run.agentStart();
  }

  /** A user message Pi delivered (a run's prompt, steering, a queued follow-up). */
  userMessage(text: string): void {
    this.run.userMessage(text);
  }

  /** A custom message Pi delivered (`ownAnchor`: State Flow's own run anchor). */
  customMessage(customType: string, ownAnchor: boolean): void {
    this.run.customMessage(customType, ownAnchor);
  }

  /** Resolves once the open run is prepared: shared state adopted, Knowledge discovered (at once when none runs). */
  async prepared(): Promise<void> {
    await this.run.prepared();
    this.syncHost();
  }

  /** A successful read of `path` (absolute, as executed): it may oblige a compilation. */
  sourceRead(path: string): void {
    if (isToolsActive(this.episode.getSnapshot())) this.knowledge.sourceRead(path);
  }

  /** message_end of a terminal draft: the resolution machine decides what becomes of it. */
  draft(draft: Draft): void {
    this.run.draft(draft);
  }

  /** turn_end: closes the barrier batch; an eligible complete answer is committed as response. */
  async turnEnd(): Promise<void> {
    this.barrier().send({ type: "BATCH_END" });
    await this.run.turnEnd();
    this.syncHost();
  }

  /** agent_settled: the run is over, with every retry and queued message Pi ran in it. */
  runEnded(): void {
    this.run.ended();
    this.publication.runEnd();
  }

  /** Logs a refused patch_state call with the run's resolution position (opt-in diagnostics). */
  patchRefused(record: Omit<DiagnosticRecord, "kind">): void {
    this.run.patchRefused(record);
  }

  // ---- tools ----------------------------------------------------------------------------------

  /** The patch_state barrier over the current assistant batch (`batch` reads it when a new one begins). */
  toolCall(toolCallId: string, batch: () => readonly ToolCallRef[] | null): BarrierDecision {
    if (!isToolsActive(this.episode.getSnapshot())) return { block: false };
    const barrier = this.barrier();
    if (!inCurrentBatch(barrier.getSnapshot(), toolCallId)) {
      const calls = batch();
      if (calls) barrier.send({ type: "BATCH", calls });
    }
    barrier.send({ type: "TOOL_CALL", id: toolCallId });
    return toolCallDecision(barrier.getSnapshot(), toolCallId);
  }

  async patchState(set: PatchSet): Promise<PatchAccepted> {
    try {
      return await this.run.patchState(set);
    } finally {
      this.syncHost();
    }
  }

  /** read_state: what the model is shown of a boundary (runtime-owned provenance stripped from artifacts). */
  readState(offset: number, scope: ScopeSelector): TemporalRead {
    if (!isToolsActive(this.episode.getSnapshot())) throw new Error("State Flow is not enabled on this branch.");
    const read = this.read(offset, scope);
    return { ...read, state: { ...read.state, artifacts: projectArtifacts(read.state.artifacts as JsonObject) } };
  }

  /** Lazy temporal read from the bound state: no publication, no history step. */
  read(offset: number, scope: ScopeSelector): TemporalRead {
    return this.binding.read(offset, scope);
  }

  // ---- what the host asks ---------------------------------------------------------------------

  projection(): Projection {
    const mode = projectionMode(this.episode.getSnapshot());
    const { identity, state } = this.binding;
    if (mode === "failedClosed") return { mode: "closed" };
    if (mode === "ordinary" || !identity) return { mode: "ordinary" };
    const sessionId = identity.sessionId;
    if (mode === "passive") return { mode: "passive", sessionId, discarded: this.run.discarded() };
    if (!state || this.run.unequipped()) return { mode: "ordinary" };
    return {
      mode: mode === "active" ? "steady" : "bootstrap",
      sessionId,
      discarded: this.run.discarded(),
      specification: this.run.specification(),
      freshness: this.run.freshness(),
      view: state.view,
      invalidations: this.knowledge.invalidations(state),
      resolution: this.run.resolutionView(),
    };
  }

  /**
   * Why user input is refused: a failed-closed branch runs nothing, since neither its state nor its
   * raw transcript may stand in for the provenance State Flow could not prove. null: accepted.
   */
  inputRefusal(): string | null {
    const snapshot = this.episode.getSnapshot();
    if (projectionMode(snapshot) !== "failedClosed") return null;
    const retained = retainedPointer(snapshot);
    return inputRefusedNotice(retained?.kind ?? "unproven", retained?.detail ?? null);
  }

  /** The bound store in a few words: where it is, Git or files, and its remote. */
  private storeDescription(): string {
    const kind = this.binding.store?.store.kind;
    if (kind !== "git") return `${this.options.storeRoot} (files only: Git is not installed)`;
    const remote = this.publication.summary?.status === "local-only" ? "no remote: commits stay local" : "remote set";
    return `${this.options.storeRoot} (Git, ${remote})`;
  }

  /** Flat episode state, e.g. "active.steady". */
  episodeName(): string {
    return episodeStateName(this.episode.getSnapshot());
  }

  /** Why the branch's state could not be proven, when the episode retained a pointer it could not load. */
  private unavailable(): string | null {
    const retained = retainedPointer(this.episode.getSnapshot());
    if (!retained) return null;
    return retained.detail ?? `branch revision ${retained.revision ?? "(none valid)"} is ${retained.kind}`;
  }

  /**
   * /state-flow-show, -history and -diff: queries of the cached runtime like status (no event, no
   * publication); an older boundary is read back from Git, given the revisions the branch recorded.
   */
  inspect(command: InspectCommand, args: string, recorded: readonly RecordedRevision[]): Promise<InspectAnswer> {
    const { store, state } = this.binding;
    const mode = projectionMode(this.episode.getSnapshot());
    return INSPECT_COMMANDS[command]({ mode, state, store, recorded, unavailable: this.unavailable() }, args);
  }

  /** /state-flow-fork's boundary (a query, like inspect): the fork itself is Pi's, its start the new session's. */
  forkTarget(args: string, recorded: readonly RecordedRevision[]): Promise<ForkTarget> {
    const { store, state } = this.binding;
    const mode = projectionMode(this.episode.getSnapshot());
    return forkTarget({ mode, state, store, recorded, unavailable: this.unavailable() }, args);
  }

  /** /state-flow-sync: fetch and bring another machine's changes in, or choose a side for a scope both changed. */
  sync(args: string): Promise<SyncAnswer> {
    if (this.publication.summary === null)
      return Promise.resolve({
        text: "State Flow is not on for this branch, so it has no store to sync: /state-flow-start turns it on.",
        refused: true,
      });
    return runSyncCommand(this.publication, args);
  }

  /** /state-flow-refresh (runtime/knowledge-upkeep.ts): a refusal says what to do and changes nothing. */
  async refreshKnowledge(args: string): Promise<{ text: string; refused: boolean }> {
    if (!isToolsActive(this.episode.getSnapshot())) {
      return {
        text:
          "State Flow is not on for this branch, so no run would refresh anything: /state-flow-start, then ask " +
          "again.",
        refused: true,
      };
    }
    try {
      return { text: await this.knowledge.requestRefresh(args), refused: false };
    } catch (error) {
      if (!(error instanceof StateFlowError)) throw error;
      return { text: error.message, refused: true };
    }
  }

  status(): string {
    const snapshot = this.episode.getSnapshot();
    const { store, state } = this.binding;
    return renderStatus({
      episode: episodeStateName(snapshot),
      mode: projectionMode(snapshot),
      remote: this.publication.summary,
      pending: this.publication.pending,
      sync: this.publication.syncView,
      toolsActive: isToolsActive(snapshot),
      missingTools: isToolsActive(snapshot) ? this.host.missingTools() : [],
      storeRoot: this.options.storeRoot,
      storeKind: store?.store.kind ?? "unopened",
      runtime: state,
      unavailable: this.unavailable(),
      publication: this.publication.label(store?.store.kind),
      pendingTarget: this.publication.pendingTarget,
      invalidations: state
        ? this.knowledge.invalidations(state)
        : { unavailable: "no State Flow runtime on this branch" },
    });
  }

  // ---- machine plumbing -----------------------------------------------------------------------

  /** Sends a host event and waits until the episode's invoked work (start, restore, stop…) has settled. */
  private async send(event: EpisodeEvent): Promise<void> {
    this.episode.send(event);
    await waitFor(this.episode, (snapshot) => !snapshot.hasTag("busy"));
    this.syncHost();
  }

  /** Tells the host what the episode says: tools on or off, the footer, and missing tools once. */
  private syncHost(): void {
    const snapshot = this.episode.getSnapshot();
    const mode = projectionMode(snapshot);
    const { state } = this.binding;
    const detail =
      mode === "ordinary"
        ? undefined
        : mode === "passive"
          ? "stopped"
          : mode === "failedClosed"
            ? "unavailable"
            : state
              ? compactStatus(headBoundary(state.view.lineage).step)
              : undefined;
    const footer = detail === undefined ? undefined : { detail };
    const toolsActive = isToolsActive(snapshot);
    this.host.sync({ toolsActive, toolsRegistered: isToolsRegistered(snapshot), footer });
    // The episode says the missing tools once each time they go missing.
    this.episode.send({ type: "TOOLS_SYNCED", missing: toolsActive ? this.host.missingTools() : [] });
  }

  /** The branch's patch_state barrier (the episode's child). */
  private barrier() {
    return branchBarrier(this.episode.getSnapshot());
  }
}
