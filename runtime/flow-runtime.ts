// The Pi-free runtime of one branch. It owns the episode and barrier actors (the episode spawns
// one resolution actor per enabled run), the state store, the publication driver and the branch
// runtime they produce, and it carries out every effect the machines emit, answering each with the
// machine's result event. The host (the Pi adapter) turns its lifecycle events into the calls
// below and implements `BranchHost`; every lifecycle question is the machines' to answer.

import { basename, join } from "node:path";
import { fromPromise, waitFor, type Actor } from "xstate";
import { parsePatchSet, type PatchSet } from "../storage/core/cohort.ts";
import { StateFlowError, errorMessage } from "../storage/core/errors.ts";
import type { ScopeSelector } from "../storage/core/scope-state.ts";
import { headBoundary, readTemporalState, type TemporalRead, type TemporalView } from "../storage/core/temporal.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { projectArtifacts } from "../storage/core/artifacts.ts";
import { isJsonObject } from "../storage/core/json.ts";
import { assertPromotedBodiesKept, assertPromotions } from "../storage/core/promotions.ts";
import { applyScopePatch } from "../storage/core/scope-state.ts";
import {
  barrierMachine,
  inCurrentBatch,
  toolCallDecision,
  type BarrierDecision,
  type ToolCallRef,
} from "../machines/barrier.ts";
import {
  episodeMachine,
  episodeStateName,
  isToolsActive,
  isToolsRegistered,
  projectionMode,
  retainedPointer,
  runResolution,
  type EpisodeEvent,
  type SessionStartReason,
  type BranchShape,
} from "../machines/episode.ts";
import {
  resolutionMachine,
  isResolutionSettled,
  isTerminalEligible,
  steersUsed,
  type DraftEnding,
  type ResolutionEmitted,
  type ResolutionEvent,
} from "../machines/resolution.ts";
import { killPoint } from "../storage/fs/crash-points.ts";
import { scopeFiles } from "../storage/layout.ts";
import { gitInstalled, openStore } from "../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../storage/state-store.ts";
import { Diagnostics, type DiagnosticRecord } from "./diagnostics.ts";
import type { BranchHost } from "./host.ts";
import {
  episodeNotices,
  inputRefusedNotice,
  legacyMigratedNotice,
  legacySkillsNotice,
  toolsMissingNotice,
} from "./notices.ts";
import { planLegacySkills } from "./legacy-skills.ts";
import { sourceHash } from "./knowledge-discovery.ts";
import { BranchPublication, type PublicationPolicy } from "./publication.ts";
import { frozenRuntime, restoreBranch } from "./restore-branch.ts";
import type { RestoreResult } from "../machines/restore.ts";
import { compactStatus, renderStatus } from "./status.ts";
import { createFlowActor, type FlowInspection } from "./flow-actor.ts";
import { compilationRequired, replacingSkillArtifacts } from "./compilation-obligations.ts";
import { KnowledgeRun, type Invalidations } from "./knowledge-run.ts";
import {
  NO_SPECIFICATION,
  specificationForRun,
  withRunSource,
  withUserMessage,
  type RunTrigger,
  type Specification,
} from "./specification.ts";

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
      view: TemporalView;
      /** The run's artifact_invalidations plan, or why it is unavailable (never a falsely clean list). */
      invalidations: Invalidations;
      resolution: { eligible: boolean; steers: number } | null;
    };

/** A terminal assistant draft of the current run (`id` tells the host's messages apart). */
export interface Draft {
  id: number;
  ending: DraftEnding;
  text: string;
  stopReason: string | undefined;
}

export interface PatchAccepted {
  text: string;
  details: Record<string, unknown>;
}

export class FlowRuntime {
  readonly episode: Actor<typeof episodeMachine>;
  private readonly barrier: Actor<typeof barrierMachine>;
  private readonly host: BranchHost;
  private readonly options: FlowRuntimeOptions;
  private readonly diagnostics: Diagnostics;
  private readonly publication: BranchPublication;
  private store: StateStore | null = null;
  private runtime: BranchState | null = null;
  private identity: SessionIdentity | null = null;
  private specification: Specification = NO_SPECIFICATION;
  /** The current run started while State Flow's tools could not be active: it runs as ordinary Pi. */
  private unequipped = false;
  /** The current run's Knowledge (discovery, plan, obligations); null before the first enabled run. */
  private knowledge: KnowledgeRun | null = null;
  /** The missing-tools notice was given (again after the tools came back and went missing anew). */
  private toolsMissingSaid = false;
  private readonly discarded = new Set<number>();
  private resolutionEffects: ResolutionEmitted[] = [];

  constructor(host: BranchHost, options: FlowRuntimeOptions) {
    this.host = host;
    this.options = options;
    // The episode's I/O: each actor's success or failure is the machine's transition to take.
    const machine = episodeMachine.provide({
      actors: {
        resolution: resolutionMachine.provide({
          actors: { commitResponse: fromPromise(({ input }) => this.commitResponse(input.text)) },
        }),
        startStorage: fromPromise(({ input }) => this.startStorage(input.fromFrozen)),
        adoptGit: fromPromise(() => this.adoptIntoGit()),
        selectRestore: fromPromise(() => this.selectRestore()),
        persistStop: fromPromise(() => this.persistStop()),
      },
      actions: {
        registerTools: () => this.host.registerTools(),
        freezeHandoff: () => this.freezeHandoff(),
      },
    });
    this.episode = createFlowActor(machine, {
      input: { autoStart: options.autoStart },
      inspection: options.inspection,
    });
    this.episode.on("episode.notice", ({ code, detail }) => {
      for (const { text, level } of episodeNotices(code, detail)) this.host.notify(text, level);
    });
    this.episode.start();
    this.barrier = createFlowActor(barrierMachine, { inspection: options.inspection });
    this.barrier.start();
    const { agentDir, enabled } = options.diagnostics;
    this.diagnostics = new Diagnostics(agentDir, enabled, options.storeRoot, (m) => host.notify(m, "warning"));
    this.publication = new BranchPublication((m) => host.notify(m, "warning"), options.inspection?.inspect);
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  async sessionStart(reason: SessionStartReason, identity: SessionIdentity, branch: BranchShape): Promise<void> {
    this.identity = identity;
    this.runtime = null;
    await this.send({ type: "SESSION_START", reason, branch });
  }

  async tree(): Promise<void> {
    await this.send({ type: "TREE" });
  }

  async command(which: "start" | "stop"): Promise<void> {
    if (this.episode.getSnapshot().status !== "active") {
      this.host.notify(
        "State Flow has shut down for this session runtime; reload or reopen the session first.",
        "warning",
      );
      return;
    }
    await this.send(which === "start" ? { type: "START", adoptGit: this.gitAdoptable() } : { type: "STOP" });
  }

  shutdown(): void {
    this.episode.send({ type: "SHUTDOWN" });
    this.publication.shutdown();
    this.barrier.stop();
    this.options.inspection?.stop();
  }

  /**
   * A run begins (a user prompt, or a message another extension sent with triggerTurn); true when
   * it is an enabled run (the host then adds the protocol and anchor).
   */
  runStarted(trigger: RunTrigger): boolean {
    this.discarded.clear();
    this.unequipped = isToolsActive(this.episode.getSnapshot()) && this.host.missingTools().length > 0;
    if (this.unequipped || !this.beginResolution()) return false;
    this.specification = specificationForRun(this.specification, trigger);
    this.startDiscovery();
    return true;
  }

  /** Names what started a run the host could not name when it began. */
  runSource(source: string): void {
    this.specification = withRunSource(this.specification, source);
  }

  /**
   * A user message Pi delivered inside the run (steering, a queued follow-up) is added to the
   * specification. Once the run's answer was resolved, it asks for another answer: a fresh
   * resolution, so that answer too is resolved before it becomes the response.
   */
  userMessage(text: string): void {
    const resolution = runResolution(this.episode.getSnapshot());
    if (!resolution || !this.runtime || this.unequipped) return;
    this.specification = withUserMessage(this.specification, text);
    if (isResolutionSettled(resolution.getSnapshot())) this.beginResolution();
  }

  /** Discovery runs beside the run's start (never on the activation path) and is awaited before its first context. */
  private startDiscovery(): void {
    const metaPath = this.identity ? join(this.options.storeRoot, scopeFiles("global", this.identity).meta) : null;
    this.knowledge = new KnowledgeRun(this.options.knowledgeRoot, metaPath);
  }

  /** Resolves once the current run's Knowledge discovery is complete (at once when none runs). */
  async knowledgeReady(): Promise<void> {
    if (await this.knowledge?.ready()) await this.removeVanishedSources();
  }

  /**
   * Sources discovery no longer finds lose their global artifacts and provenance in one runtime
   * transition: deterministic, no read, no model call. A shared-scope conflict is retried once on
   * the re-read view; a failure is said and leaves the artifacts for the next run.
   */
  private async removeVanishedSources(): Promise<void> {
    if (!this.runtime || !this.store || !this.knowledge) return;
    const plan = this.knowledge.plan(this.runtime);
    if ("unavailable" in plan || plan.removed.length === 0) return;
    const artifacts = Object.fromEntries(plan.removed.map((path) => [path, null]));
    const { patches } = parsePatchSet({ global: { artifacts } });
    const message = `state-flow: knowledge removed ${plan.removed.length} source(s)`;
    const options = { prune: { global: plan.prune } };
    try {
      const committed = await this.store
        .commit(this.runtime, patches, message, options)
        .catch(async (error: unknown) => {
          if (!(error instanceof StateFlowError && error.code === "shared-scope-advanced")) throw error;
          this.runtime = await this.store!.refresh(this.runtime!);
          return this.store!.commit(this.runtime, patches, message, options);
        });
      await this.accept(committed.runtime);
    } catch (error) {
      this.host.notify(
        `State Flow could not remove the artifacts of ${plan.removed.join(", ")}, whose sources are gone ` +
          `(${errorMessage(error)}); the next run tries again.`,
        "warning",
      );
    }
  }

  /**
   * Retired `contract.compiled_skills` stores become Skill artifacts in one runtime transition with
   * their provenance; said once. A failure is said and leaves them for the next start.
   */
  private async migrateLegacySkills(): Promise<void> {
    if (!this.runtime || !this.store || !this.identity) return;
    const plan = planLegacySkills(this.runtime.view.current, this.identity.cwd, sourceHash);
    if (!plan) return;
    try {
      const { patches } = parsePatchSet(plan.input);
      const message = "state-flow: migrate contract.compiled_skills into Skill artifacts";
      const committed = await this.store.commit(this.runtime, patches, message, { provenance: plan.provenance });
      await this.accept(committed.runtime, false); // part of start: never waits on a push
      this.host.notify(legacySkillsNotice(plan.migrated), "info");
    } catch (error) {
      this.host.notify(
        `State Flow could not migrate contract.compiled_skills into Skill artifacts (${errorMessage(error)}); ` +
          "the next start tries again.",
        "warning",
      );
    }
  }

  /**
   * A successful read of `path` (absolute, as executed): a `SKILL.md` obliges its Skill
   * compilation; any other path, whatever the run's Knowledge plan says it obliges.
   */
  sourceRead(path: string): void {
    if (!this.runtime || !isToolsActive(this.episode.getSnapshot())) return;
    if (basename(path) === "SKILL.md") this.knowledge?.skillRead(path);
    else this.knowledge?.sourceRead(this.runtime, path);
  }

  private invalidations(runtime: BranchState): Invalidations {
    return this.knowledge?.invalidations(runtime) ?? { unavailable: "no enabled run has discovered Knowledge yet" };
  }

  private beginResolution(): boolean {
    this.episode.send({ type: "RUN_STARTED" });
    const resolution = runResolution(this.episode.getSnapshot());
    if (!resolution || !this.runtime) return false;
    resolution.on("*", (e) => this.resolutionEffects.push(e as ResolutionEmitted));
    return true;
  }

  projection(): Projection {
    const mode = projectionMode(this.episode.getSnapshot());
    if (mode === "failedClosed") return { mode: "closed" };
    if (mode === "ordinary" || !this.identity || this.unequipped) return { mode: "ordinary" };
    const sessionId = this.identity.sessionId;
    if (mode === "passive") return { mode: "passive", sessionId, discarded: this.discarded };
    if (!this.runtime) return { mode: "ordinary" };
    return {
      mode: mode === "active" ? "steady" : "bootstrap",
      sessionId,
      discarded: this.discarded,
      specification: this.specification,
      view: this.runtime.view,
      invalidations: this.invalidations(this.runtime),
      resolution: this.resolutionView(),
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

  /** The patch_state barrier over the current assistant batch (`batch` reads it when a new one begins). */
  toolCall(toolCallId: string, batch: () => readonly ToolCallRef[] | null): BarrierDecision {
    if (!isToolsActive(this.episode.getSnapshot())) return { block: false };
    if (!inCurrentBatch(this.barrier.getSnapshot(), toolCallId)) {
      const calls = batch();
      if (calls) this.barrier.send({ type: "BATCH", calls });
    }
    this.barrier.send({ type: "TOOL_CALL", id: toolCallId });
    return toolCallDecision(this.barrier.getSnapshot(), toolCallId);
  }

  /** message_end of a terminal draft: the resolution machine decides what becomes of it. */
  draft(draft: Draft): void {
    const resolution = this.activeResolution();
    if (!resolution) return;
    const eligible = isTerminalEligible(resolution.getSnapshot());
    this.toResolution({ type: "DRAFT", ending: draft.ending, text: draft.text });
    const unresolved = (attempt: number) =>
      this.diagnostics.write({
        kind: "unresolved-draft",
        text: draft.text,
        stopReason: draft.stopReason,
        attempt,
        eligible,
      });
    for (const effect of this.resolutionEffects.splice(0)) {
      if (effect.type === "resolution.discardDraft") {
        this.discarded.add(draft.id);
        this.host.recordDiscarded(draft.id);
      } else if (effect.type === "resolution.steer") {
        unresolved(effect.attempt);
        this.host.steer(effect.attempt);
      } else if (effect.type === "resolution.exhausted") {
        unresolved(effect.attempts);
        this.host.notify(
          `State Flow: the answer was not accepted after ${effect.attempts} attempts without patch_state ` +
            "final:true. Committed state and enablement are kept; ask again to continue.",
          "error",
        );
      }
    }
  }

  /**
   * turn_end: closes the barrier batch; an eligible complete answer is committed as response (the
   * resolution's `commitResponse` actor), and this waits until that commit has settled.
   */
  async turnEnd(): Promise<void> {
    this.barrier.send({ type: "BATCH_END" });
    const resolution = this.activeResolution();
    if (!resolution) return;
    resolution.send({ type: "TURN_END" });
    await waitFor(resolution, (snapshot) => !snapshot.matches("committing"));
    for (const effect of this.resolutionEffects.splice(0)) {
      if (effect.type === "resolution.commitFailed")
        this.host.notify(`State Flow could not commit the response: ${effect.error}`, "error");
    }
    this.syncHost();
  }

  runEnded(): void {
    if (this.activeResolution()) this.toResolution({ type: "RUN_ENDED" });
    this.resolutionEffects.splice(0);
    this.publication.runEnd();
  }

  /** Logs a refused patch_state call with the run's resolution position (opt-in diagnostics). */
  patchRefused(record: Omit<DiagnosticRecord, "kind">): void {
    const resolution = runResolution(this.episode.getSnapshot());
    this.diagnostics.write({
      kind: "rejected-patch",
      ...record,
      attempt: resolution ? steersUsed(resolution.getSnapshot()) : null,
      eligible: resolution ? isTerminalEligible(resolution.getSnapshot()) : null,
    });
  }

  // ---- tools ----------------------------------------------------------------------------------

  async patchState(set: PatchSet): Promise<PatchAccepted> {
    if (!isToolsActive(this.episode.getSnapshot()) || !this.runtime || !this.store) {
      throw new Error("State Flow is not enabled on this branch; /state-flow-start enables it.");
    }
    this.checkPromotions(set);
    const unmet = this.knowledge?.unmet(set) ?? [];
    if (unmet.length > 0) {
      this.toResolution({ type: "PATCH_REJECTED" });
      throw compilationRequired(unmet);
    }
    const scopes = Object.keys(set.patches);
    if (scopes.length === 0) {
      this.toResolution({ type: "FINAL_ONLY" });
      return {
        text: "Terminal eligibility latched (final:true); no semantic transition. Give your final answer.",
        details: { final: true, transition: null },
      };
    }
    try {
      const provenance = this.knowledge?.owed(new Date());
      const current = (scope: "cwd") => readTemporalState(this.runtime!.view, 0, scope).state.artifacts as JsonObject;
      const patch = replacingSkillArtifacts(set, this.knowledge?.open() ?? [], current);
      const { runtime, staged } = await this.store.commit(
        this.runtime,
        patch.patches,
        `state-flow: patch_state ${scopes.join("+")}`,
        // Checked on the view the cohort is staged on, which includes what other sessions wrote.
        { ...(provenance ? { provenance } : {}), check: assertPromotedBodiesKept },
      );
      this.knowledge?.compiled([...Object.keys(provenance?.global ?? {}), ...Object.keys(provenance?.cwd ?? {})]);
      await this.accept(runtime);
      this.toResolution({ type: "PATCH_ACCEPTED", final: set.final });
      const step = staged.cohort.transition.step;
      const changed = Object.keys(staged.cohort.records);
      const unchanged =
        staged.cohort.unchanged.length > 0 ? ` Unchanged and not recorded: ${staged.cohort.unchanged.join(", ")}.` : "";
      const finalNote = set.final ? " Terminal eligibility latched: your next complete answer is accepted." : "";
      return {
        text:
          `Accepted transition step ${step} (${changed.join(", ")}).${unchanged}${finalNote} ` +
          "state[0] is rebuilt for your next inference; do not restate it.",
        details: {
          step,
          transition: staged.cohort.transition.id,
          scopes: changed,
          revision: runtime.pointer.revision,
          final: set.final,
        },
      };
    } catch (error) {
      this.toResolution({ type: "PATCH_REJECTED" });
      // The refusal tells the model to re-read the scope and patch again: the cached view must
      // then show what the other session wrote, and the next patch must build on it.
      // (A refresh that fails leaves the view as it was: the next patch is refused and refreshes again.)
      if (error instanceof StateFlowError && error.code === "shared-scope-advanced") {
        const stale = this.runtime;
        this.runtime = await this.store.refresh(stale).catch(() => stale);
      }
      throw error;
    }
  }

  /** A global patch may not leave a memory promotion it touches malformed (storage/core/promotions.ts). */
  private checkPromotions(set: PatchSet): void {
    const touched = set.patches.global?.working?.memory_promotions;
    if (touched === undefined || !this.runtime) return;
    try {
      const current = readTemporalState(this.runtime.view, 0, "global").state;
      const after = applyScopePatch(current, set.patches.global!, "global");
      const ids = isJsonObject(touched) ? Object.keys(touched) : [];
      assertPromotions(ids, (after.working as JsonObject).memory_promotions);
    } catch (error) {
      this.toResolution({ type: "PATCH_REJECTED" });
      throw error;
    }
  }

  /** read_state: what the model is shown of a boundary (runtime-owned provenance stripped from artifacts). */
  readState(offset: number, scope: ScopeSelector): TemporalRead {
    if (!isToolsActive(this.episode.getSnapshot())) throw new Error("State Flow is not enabled on this branch.");
    const read = this.read(offset, scope);
    return { ...read, state: { ...read.state, artifacts: projectArtifacts(read.state.artifacts as JsonObject) } };
  }

  /** Lazy temporal read from the cached runtime: no publication, no history step. */
  read(offset: number, scope: ScopeSelector): TemporalRead {
    if (!this.runtime)
      throw new StateFlowError("offset-unavailable", "no State Flow runtime is selected on this branch");
    return readTemporalState(this.runtime.view, offset, scope);
  }

  /** Flat episode state, e.g. "active.steady". */
  episodeName(): string {
    return episodeStateName(this.episode.getSnapshot());
  }

  status(): string {
    const snapshot = this.episode.getSnapshot();
    const retained = retainedPointer(snapshot);
    return renderStatus({
      episode: episodeStateName(snapshot),
      toolsActive: isToolsActive(snapshot),
      missingTools: isToolsActive(snapshot) ? this.host.missingTools() : [],
      storeRoot: this.options.storeRoot,
      storeKind: this.store?.store.kind ?? "unopened",
      runtime: this.runtime,
      unavailable: retained
        ? (retained.detail ?? `branch revision ${retained.revision ?? "(none valid)"} is ${retained.kind}`)
        : null,
      publication: this.publication.label(this.store?.store.kind),
      pendingTarget: this.publication.pendingTarget,
      invalidations: this.runtime
        ? this.invalidations(this.runtime)
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

  private syncHost(): void {
    const snapshot = this.episode.getSnapshot();
    const mode = projectionMode(snapshot);
    const footer =
      mode === "ordinary"
        ? undefined
        : mode === "passive"
          ? "state-flow stopped"
          : mode === "failedClosed"
            ? "state-flow unavailable"
            : this.runtime
              ? compactStatus(headBoundary(this.runtime.view.lineage).step)
              : undefined;
    const toolsActive = isToolsActive(snapshot);
    this.host.sync({ toolsActive, toolsRegistered: isToolsRegistered(snapshot), footer });
    const missing = toolsActive ? this.host.missingTools() : [];
    if (missing.length > 0 && !this.toolsMissingSaid) this.host.notify(toolsMissingNotice(missing), "warning");
    this.toolsMissingSaid = missing.length > 0;
  }

  /** The current run's resolution actor while its run is still being resolved. */
  private activeResolution() {
    const resolution = runResolution(this.episode.getSnapshot());
    return resolution && !isResolutionSettled(resolution.getSnapshot()) ? resolution : null;
  }

  private toResolution(event: ResolutionEvent): void {
    runResolution(this.episode.getSnapshot())?.send(event);
  }

  private resolutionView(): { eligible: boolean; steers: number } | null {
    const resolution = runResolution(this.episode.getSnapshot());
    if (!resolution) return null;
    const snapshot = resolution.getSnapshot();
    return { eligible: isTerminalEligible(snapshot), steers: steersUsed(snapshot) };
  }

  // ---- effects --------------------------------------------------------------------------------

  /** The branch's store is file-only while a git executable is available now (the machine decides what START means). */
  private gitAdoptable(): boolean {
    return this.store?.store.kind === "file" && gitInstalled(this.options.env);
  }

  /** The episode's `startStorage` actor: a failure is its error transition (the machine names it). */
  private async startStorage(fromFrozen: boolean): Promise<void> {
    const store = await this.openStateStore(true);
    const migrated = await store.migrateLegacy();
    if (migrated) this.host.notify(legacyMigratedNotice(migrated), "info");
    const selected = fromFrozen ? await frozenRuntime(this.runtime, this.host.markers(), store) : null;
    const runtime = await store.start(selected, this.options.remotePublication);
    // Bind the branch first, then publish: the new publication recovers this revision as pending
    // and pushes it once (in the background: start never waits on the network).
    await this.accept(runtime, false);
    await this.publication.open(runtime, store.store.publication ?? null);
    await this.migrateLegacySkills();
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
      // The file-only publication has nothing to publish; the Git-backed one recovers this revision
      // as pending and pushes it once (as after a start).
      this.publication.close();
      await this.accept(runtime, false);
      await this.publication.open(runtime, store.store.publication ?? null);
    } catch (error) {
      this.store = fileStore; // a repository opened before the failure is not used until the next start
      throw error;
    }
  }

  /**
   * The episode's `selectRestore` actor: settles an interrupted publication, then selects the
   * branch's revision. A store that cannot be read at all rejects: the machine fails closed.
   */
  private async selectRestore(): Promise<RestoreResult> {
    try {
      const store = await this.openStateStore(false);
      // The publication driver installed after the restore asks which remote to push to (a git
      // process): asked now, it runs while the restore reads the store.
      void store.store.publication?.remote.publicationRemote().catch(() => undefined);
      const outcome = await restoreBranch({
        store,
        host: this.host,
        sessionId: this.identity!.sessionId,
        current: () => this.runtime,
        policy: this.options.remotePublication,
        freeze: (stopped) => {
          this.runtime = stopped;
          this.freezeHandoff();
        },
      });
      if (outcome.runtime) await this.publication.open(outcome.runtime, store.store.publication ?? null);
      this.runtime = outcome.runtime;
      return outcome.result;
    } catch (error) {
      this.runtime = null;
      throw error;
    }
  }

  /**
   * The frozen exit handoff (effective state at the stop boundary) followed by the branch's
   * disabled marker: together they make this physical session's passive projection durable
   * across reload, resume and /tree, while another session reading the branch sees plain off.
   */
  private freezeHandoff(): void {
    if (!this.identity) return;
    this.host.sendHandoff(this.runtime ? readTemporalState(this.runtime.view).state : null);
    // The stopped revision follows the handoff on the branch, so any position that holds it also
    // holds the handoff, and a restart (or a restore after /tree) finds that exact boundary.
    if (this.runtime) this.host.appendCheckpoint({ revision: this.runtime.pointer.revision });
    this.host.appendCheckpoint({ disabled: true });
  }

  /** The episode's `persistStop` actor: stop is config-only, the disabled runtime revision is published. */
  private async persistStop(): Promise<void> {
    if (!this.runtime || !this.store) throw new Error("no runtime is selected on this branch");
    this.runtime = await this.store.publishConfig(
      this.runtime,
      { ...this.runtime.config, enabled: false },
      "state-flow: stop",
    );
    this.host.notify(
      "State Flow stopped: semantic state is kept; tools are off and the frozen handoff stays for this session.",
      "info",
    );
  }

  /**
   * A new durable revision: bind the branch to it (a checkpoint entry) and hand it to publication.
   * `wait` false: under transition policy the push runs without being awaited (activation paths).
   */
  private async accept(runtime: BranchState, wait = true): Promise<void> {
    const changed = runtime.pointer.revision !== this.runtime?.pointer.revision;
    this.runtime = runtime;
    if (changed) {
      this.knowledge?.published();
      killPoint("branch.appending");
      this.host.appendCheckpoint({ revision: runtime.pointer.revision });
      killPoint("branch.appended");
      await this.publication.accepted(runtime.pointer.revision, wait);
    }
    this.syncHost();
  }

  /** The resolution's `commitResponse` actor: an answer equal to the response already held is accepted as is. */
  private async commitResponse(text: string): Promise<void> {
    if (!this.runtime || !this.store) throw new Error("no runtime is selected on this branch");
    try {
      const { patches } = parsePatchSet({ session: { response: text } }, { allowResponse: true });
      const { runtime } = await this.store.commit(this.runtime, patches, "state-flow: response", { run: true });
      await this.accept(runtime);
    } catch (error) {
      if (!(error instanceof StateFlowError && error.code === "no-op-cohort")) throw error;
    }
  }

  private async openStateStore(initGit: boolean): Promise<StateStore> {
    // (git availability is checked now, not when the store was opened: it may have been installed since)
    const reusable = !initGit || this.store?.store.kind === "git" || !gitInstalled(this.options.env);
    if (this.store && reusable) return this.store;
    const store = await openStore({ root: this.options.storeRoot, env: this.options.env, initGit });
    this.store = new StateStore(store, this.identity!);
    return this.store;
  }
}
