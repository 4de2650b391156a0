// The runtime's side of a Pi run: it sends Pi's run events to the run actor the episode spawns (M5),
// answers the host's questions about the open run from its snapshot (equipped, specification,
// discarded drafts, resolution position), supplies the run machine's actors and host actions
// (Knowledge discovery, the answer's commit, steers, discard records, notices), and runs the
// patch_state pipeline, whose outcome it reports to the run.

import { parsePatchSet, type PatchSet } from "../storage/core/cohort.ts";
import { StateFlowError, errorMessage } from "../storage/core/errors.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { isJsonObject } from "../storage/core/json.ts";
import { assertPromotedBodiesKept, assertPromotions } from "../storage/core/promotions.ts";
import type { ProvenanceRecord } from "../storage/core/provenance.ts";
import { applyScopePatch } from "../storage/core/scope-state.ts";
import { readTemporalState } from "../storage/core/temporal.ts";
import { fromPromise, waitFor, type Actor } from "xstate";
import { type episodeMachine } from "../machines/episode.ts";
import { isToolsActive, openRun } from "../machines/episode-queries.ts";
import {
  MAX_RESOLUTION_STEERS,
  isTerminalEligible,
  resolutionMachine,
  steersUsed,
  type DraftEnding,
  type ResolutionEvent,
  type ResolutionMachineEvent,
} from "../machines/resolution.ts";
import { isPrepared, runDiscarded, runMachine, runResolution } from "../machines/run.ts";
import type { Freshness, RunMachineEvent } from "../machines/run.ts";
import { sharedMoves } from "../storage/core/shared-moves.ts";
import type { BranchBinding } from "./branch-binding.ts";
import { compilationRequired, replacingSkillArtifacts } from "./compilation-obligations.ts";
import type { DiagnosticRecord, Diagnostics } from "./diagnostics.ts";
import type { BranchHost } from "./host.ts";
import type { KnowledgeUpkeep } from "./knowledge-upkeep.ts";
import type { RunTrigger, Specification } from "../machines/specification.ts";

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

export class RunSession {
  /** The branch's episode actor (it spawns the run actor); read when used, since it is created after this. */
  private readonly episodeActor: () => Actor<typeof episodeMachine>;
  private readonly binding: BranchBinding;
  private readonly knowledge: KnowledgeUpkeep;
  private readonly host: BranchHost;
  private readonly diagnostics: Diagnostics;

  constructor(
    episodeActor: () => Actor<typeof episodeMachine>,
    binding: BranchBinding,
    knowledge: KnowledgeUpkeep,
    host: BranchHost,
    diagnostics: Diagnostics,
  ) {
    this.episodeActor = episodeActor;
    this.binding = binding;
    this.knowledge = knowledge;
    this.host = host;
    this.diagnostics = diagnostics;
  }

  /**
   * The run machine with the runtime's side supplied: Knowledge discovery, the answer's commit, and
   * the host effects of its resolution. A host effect that throws is said, never left to stop the actor.
   */
  machine() {
    const unresolved = (event: { text?: string; stopReason?: string }, attempt: number) =>
      this.diagnostics.write({
        kind: "unresolved-draft",
        text: event.text ?? "",
        stopReason: event.stopReason,
        attempt,
        eligible: false,
      });
    const recordDiscarded = this.hostAction<ResolutionMachineEvent>((event) => {
      if (event.type === "DRAFT") this.host.recordDiscarded(event.id ?? 0);
    });
    const resolution = resolutionMachine.provide({
      actors: { commitResponse: fromPromise(({ input }) => this.commitResponse(input.text)) },
      actions: {
        recordUnresolvedDraft: recordDiscarded,
        recordInterruptedDraft: recordDiscarded,
        steerHiddenSameRun: this.hostAction<ResolutionMachineEvent, { attempt: number }>((event, { attempt }) => {
          if (event.type === "DRAFT") unresolved(event, attempt);
          this.host.steer(attempt);
          // The steer is hidden (001); the person is told the answer they saw was not the one recorded.
          this.host.notify(discardedNotice(attempt, this.refusal()), "info");
        }),
        reportExhausted: this.hostAction<ResolutionMachineEvent, { attempts: number }>((event, { attempts }) => {
          if (event.type === "DRAFT") unresolved(event, attempts);
          this.host.notify(exhaustedNotice(attempts, this.refusal()), "error");
        }),
        reportCommitFailed: this.hostAction<ResolutionMachineEvent>((event) => {
          const error = event.type === "xstate.error.actor.commit" ? errorMessage(event.error) : "";
          this.host.notify(`State Flow could not commit the response: ${error}`, "error");
        }),
      },
    });
    return runMachine.provide({
      actors: {
        resolution,
        refreshShared: fromPromise(() => this.refreshShared()),
        discoverKnowledge: fromPromise(async () => {
          this.knowledge.startDiscovery();
          await this.knowledge.ready();
        }),
      },
      actions: {
        reportFreshnessFailed: this.hostAction<RunMachineEvent>((event) => {
          const error = event.type === "xstate.error.actor.freshness" ? errorMessage(event.error) : "";
          this.host.notify(
            `State Flow could not check what other sessions changed (${error}); this run works from the state it ` +
              "had. Fix what the message names; the next run checks again.",
            "warning",
          );
        }),
        reportKnowledgeFailed: this.hostAction<RunMachineEvent>((event) => {
          const error = event.type === "xstate.error.actor.knowledge" ? errorMessage(event.error) : "";
          this.host.notify(`State Flow could not discover Knowledge for this run (${error}).`, "warning");
        }),
      },
    });
  }

  /** A host effect as a machine action: what it throws is said, so the actor it runs in goes on. */
  private hostAction<TEvent, TParams = undefined>(effect: (event: TEvent, params: TParams) => void) {
    // (the machines type their actions over every event an actor takes; the effect names the ones it reads)
    return ({ event }: { event: unknown }, params: unknown): void => {
      try {
        effect(event as TEvent, params as TParams);
      } catch (error) {
        try {
          this.host.notify(`State Flow: ${errorMessage(error)}`, "error");
        } catch {
          // The host cannot even notify (its session is gone): nothing is left to tell.
        }
      }
    };
  }

  /** The open run's actor (undefined between runs). */
  private current() {
    return openRun(this.episodeActor().getSnapshot());
  }

  /**
   * before_agent_start: Pi begins a run for a prompt or for a message another extension sent
   * with triggerTurn; true when the run is equipped (the host then adds the protocol and anchor).
   */
  announced(trigger: RunTrigger): boolean {
    this.episodeActor().send({ type: "RUN_ANNOUNCED", trigger, toolsMissing: this.toolsMissing() });
    return this.equipped();
  }

  /**
   * agent_start: a continuation of the open run, or a run no before_agent_start announced; true when
   * that began an equipped run (the host then sends the anchor).
   */
  agentStart(): boolean {
    const before = this.current();
    this.episodeActor().send({ type: "AGENT_START", toolsMissing: this.toolsMissing() });
    return this.current() !== before && this.equipped();
  }

  private toolsMissing(): boolean {
    return this.host.missingTools().length > 0;
  }

  /** The open run is equipped: resolved, and projected as state. */
  private equipped(): boolean {
    return this.current()?.getSnapshot().context.equipped ?? false;
  }

  /** The open run started while State Flow's tools could not be active: it runs as ordinary Pi. */
  unequipped(): boolean {
    const run = this.current();
    return run !== undefined && !run.getSnapshot().context.equipped;
  }

  /** The specification the open run works toward (between runs: the one the last run left). */
  specification(): Specification {
    return (
      this.current()?.getSnapshot().context.specification ?? this.episodeActor().getSnapshot().context.specification
    );
  }

  /** The drafts the open run discarded. */
  discarded(): ReadonlySet<number> {
    const run = this.current();
    return run ? runDiscarded(run.getSnapshot()) : new Set();
  }

  /** A user message Pi delivered inside the run (the prompt itself, steering, a queued follow-up). */
  userMessage(text: string): void {
    this.current()?.send({ type: "USER_MESSAGE", text });
  }

  /** A custom message inside the run: it may name what started a run agent_start alone began. */
  customMessage(customType: string, ownAnchor: boolean): void {
    this.current()?.send({ type: "CUSTOM_MESSAGE", customType, ownAnchor });
  }

  /** message_end of a terminal draft: the run's resolution decides what becomes of it. */
  draft(draft: Draft): void {
    this.current()?.send({
      type: "DRAFT",
      id: draft.id,
      ending: draft.ending,
      text: draft.text,
      ...(draft.stopReason === undefined ? {} : { stopReason: draft.stopReason }),
    });
  }

  /** Resolves once the open run is prepared: shared state adopted, Knowledge discovered (at once when none runs). */
  async prepared(): Promise<void> {
    const run = this.current();
    if (run) await waitFor(run, isPrepared);
  }

  /**
   * The run's `refreshShared` actor: the shared scopes other sessions published since this branch
   * read them are adopted (the store's `refresh`), unless the branch holds a past point. Costs one
   * read of each scope's meta.json when nothing moved.
   */
  async refreshShared(): Promise<Freshness> {
    const { store, state } = this.binding;
    if (!store || !state) throw new Error("no State Flow runtime is selected on this branch");
    const live = store.liveMoves(state);
    if (live.selectedPast) return { kind: "selectedPast" };
    if (live.shared.length === 0) return { kind: "current" };
    const next = await store.refresh(state);
    const moved = sharedMoves(state.view, next.view);
    // (a publication meanwhile adopted them itself and is newer: the branch keeps that one)
    if (this.binding.state === state) this.binding.state = next;
    return moved.length > 0 ? { kind: "adopted", moved } : { kind: "current" };
  }

  /** The open run's newest patch_state refusal (null: none since a patch or final:true was accepted). */
  private refusal(): string | null {
    return this.current()?.getSnapshot().context.refusal ?? null;
  }

  /** What the open run's shared-state check found. */
  freshness(): Freshness {
    return this.current()?.getSnapshot().context.freshness ?? { kind: "unchecked" };
  }

  /**
   * turn_end: an eligible complete answer is committed as response (the resolution's
   * `commitResponse` actor); this waits until that commit has settled.
   */
  async turnEnd(): Promise<void> {
    const run = this.current();
    if (!run) return;
    run.send({ type: "TURN_END" });
    const resolution = runResolution(run.getSnapshot());
    if (resolution) await waitFor(resolution, (s) => s.status !== "active" || !s.matches("committing"));
  }

  /** agent_settled: the run is over. */
  ended(): void {
    this.current()?.send({ type: "SETTLED" });
  }

  /** Logs a refused patch_state call with the run's resolution position (opt-in diagnostics). */
  patchRefused(record: Omit<DiagnosticRecord, "kind">): void {
    const view = this.resolutionView();
    this.diagnostics.write({
      kind: "rejected-patch",
      ...record,
      attempt: view ? view.steers : null,
      eligible: view ? view.eligible : null,
    });
  }

  async patchState(set: PatchSet): Promise<PatchAccepted> {
    const { store, state } = this.binding;
    if (!isToolsActive(this.episodeActor().getSnapshot()) || !state || !store) {
      throw new Error("State Flow is not enabled on this branch; /state-flow-start enables it.");
    }
    this.checkPromotions(set);
    const knowledge = this.knowledge.run;
    const unmet = knowledge?.unmet(set) ?? [];
    if (unmet.length > 0) {
      const refusal = compilationRequired(unmet);
      this.toResolution({ type: "PATCH_REJECTED", reason: refusal.message });
      throw refusal;
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
      const provenance = knowledge?.owed(new Date(), set);
      const current = (scope: "cwd") => readTemporalState(state.view, 0, scope).state.artifacts as JsonObject;
      const patch = replacingSkillArtifacts(set, knowledge?.open() ?? [], current);
      const { runtime, staged } = await store.commit(
        state,
        patch.patches,
        `state-flow: patch_state ${scopes.join("+")}`,
        // Checked on the view the cohort is staged on, which includes what other sessions wrote.
        { ...(provenance ? { provenance } : {}), check: assertPromotedBodiesKept },
      );
      knowledge?.compiled([...Object.keys(provenance?.global ?? {}), ...Object.keys(provenance?.cwd ?? {})]);
      await this.binding.accept(runtime);
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
      const noOp = error instanceof StateFlowError && error.code === "no-op-cohort";
      const unchanged = noOp ? knowledge?.owed(new Date(), set) : undefined;
      if (unchanged) return this.recordUnchanged(set, unchanged);
      this.toResolution({ type: "PATCH_REJECTED", reason: errorMessage(error) });
      // The refusal tells the model to re-read the scope and patch again: the cached view must
      // then show what the other session wrote, and the next patch must build on it.
      // (A refresh that fails leaves the view as it was: the next patch is refused and refreshes again.)
      if (error instanceof StateFlowError && error.code === "shared-scope-advanced") {
        const stale = this.binding.state ?? state;
        this.binding.state = await store.refresh(stale).catch(() => stale);
      }
      throw error;
    }
  }

  /**
   * A patch whose artifacts all equal the ones they recompile changes no semantic state, yet the
   * reads it compiles are real: their provenance is published without a semantic step (as a config
   * change is), so a refresh or a maintenance selection settles instead of being asked for again.
   */
  private async recordUnchanged(
    set: PatchSet,
    provenance: Partial<Record<"global" | "cwd", Record<string, ProvenanceRecord>>>,
  ): Promise<PatchAccepted> {
    const { store, state } = this.binding;
    const paths = [...Object.keys(provenance.global ?? {}), ...Object.keys(provenance.cwd ?? {})];
    try {
      const message = `state-flow: recompiled unchanged ${paths.length} source(s)`;
      const runtime = await store!.publishConfig(state!, state!.config, message, { provenance });
      this.knowledge.run?.compiled(paths);
      await this.binding.accept(runtime);
      this.toResolution({ type: "PATCH_ACCEPTED", final: set.final });
      const finalNote = set.final ? " Terminal eligibility latched: your next complete answer is accepted." : "";
      return {
        text:
          `No semantic change: your compilation of ${paths.join(", ")} equals its artifact; the read is recorded as ` +
          `compiled.${finalNote}`,
        details: { transition: null, compiled: paths, revision: runtime.pointer.revision, final: set.final },
      };
    } catch (error) {
      this.toResolution({ type: "PATCH_REJECTED", reason: errorMessage(error) });
      throw error;
    }
  }

  /** A global patch may not leave a memory promotion it touches malformed (storage/core/promotions.ts). */
  private checkPromotions(set: PatchSet): void {
    const touched = set.patches.global?.working?.memory_promotions;
    const { state } = this.binding;
    if (touched === undefined || !state) return;
    try {
      const current = readTemporalState(state.view, 0, "global").state;
      const after = applyScopePatch(current, set.patches.global!, "global");
      const ids = isJsonObject(touched) ? Object.keys(touched) : [];
      assertPromotions(ids, (after.working as JsonObject).memory_promotions);
    } catch (error) {
      this.toResolution({ type: "PATCH_REJECTED", reason: errorMessage(error) });
      throw error;
    }
  }

  /** The resolution's `commitResponse` actor: an answer equal to the response already held is accepted as is. */
  async commitResponse(text: string): Promise<void> {
    const { store, state } = this.binding;
    if (!state || !store) throw new Error("no runtime is selected on this branch");
    try {
      const { patches } = parsePatchSet({ session: { response: text } }, { allowResponse: true });
      const { runtime } = await store.commit(state, patches, "state-flow: response", { run: true });
      await this.binding.accept(runtime);
    } catch (error) {
      if (!(error instanceof StateFlowError && error.code === "no-op-cohort")) throw error;
    }
  }

  /** The open run's answer's resolution position, for the runtime context (null: no answer is being resolved). */
  resolutionView(): { eligible: boolean; steers: number } | null {
    const run = this.current();
    const resolution = run ? runResolution(run.getSnapshot()) : undefined;
    if (!resolution) return null;
    const snapshot = resolution.getSnapshot();
    return { eligible: isTerminalEligible(snapshot), steers: steersUsed(snapshot) };
  }

  private toResolution(event: ResolutionEvent): void {
    this.current()?.send(event);
  }
}

/**
 * Said after an answer State Flow did not accept (the `attempt`th): the draft stays on screen, so it is
 * marked, with why — the model did not record state, or its patch was refused (`refusal`).
 */
export function discardedNotice(attempt: number, refusal: string | null): string {
  const why = refusal
    ? "its patch_state was refused, so the answer could not be recorded"
    : "the model answered before recording state (patch_state with final:true)";
  const next = `attempt ${attempt + 1} of ${MAX_RESOLUTION_STEERS + 1}`;
  return `State Flow did not accept that answer: ${why}. It is asked to do that and answer again (${next}).`;
}

/**
 * Why an answer was not accepted, in the person's terms: when the model's patches were refused, the
 * refusal is the cause (a store that cannot be written, a damaged file, another session's change)
 * and asking again cannot help until it is fixed; otherwise the model answered without final:true.
 */
export function exhaustedNotice(attempts: number, refusal: string | null): string {
  if (refusal) {
    return (
      `State Flow did not accept the answer: the model's patch_state calls were refused, so after ${attempts} ` +
      `attempts no answer could be recorded. The refusal: ${refusal} Committed state and enablement are kept; ` +
      "fix what it names, then ask again."
    );
  }
  return (
    `State Flow did not accept the answer: after ${attempts} attempts the model still answered without calling ` +
    "patch_state with final:true. Committed state and enablement are kept; ask again to continue."
  );
}
