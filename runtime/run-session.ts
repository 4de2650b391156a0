// One Pi run of an enabled branch: what the user asked (the specification), whether the run is
// equipped with State Flow's tools, the drafts its resolution discarded, the patch_state pipeline,
// and the commit of its answer (the resolution's `commitResponse` actor). The episode spawns the
// run's resolution actor; this forwards Pi's run events to it and carries out what it emits.

import { parsePatchSet, type PatchSet } from "../storage/core/cohort.ts";
import { StateFlowError } from "../storage/core/errors.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { isJsonObject } from "../storage/core/json.ts";
import { assertPromotedBodiesKept, assertPromotions } from "../storage/core/promotions.ts";
import { applyScopePatch } from "../storage/core/scope-state.ts";
import { readTemporalState } from "../storage/core/temporal.ts";
import { waitFor, type Actor } from "xstate";
import { isToolsActive, runResolution, type episodeMachine } from "../machines/episode.ts";
import {
  isResolutionSettled,
  isTerminalEligible,
  steersUsed,
  type DraftEnding,
  type ResolutionEmitted,
  type ResolutionEvent,
} from "../machines/resolution.ts";
import type { BranchBinding } from "./branch-binding.ts";
import { compilationRequired, replacingSkillArtifacts } from "./compilation-obligations.ts";
import type { DiagnosticRecord, Diagnostics } from "./diagnostics.ts";
import type { BranchHost } from "./host.ts";
import type { KnowledgeUpkeep } from "./knowledge-upkeep.ts";
import {
  NO_SPECIFICATION,
  specificationForRun,
  withRunSource,
  withUserMessage,
  type RunTrigger,
  type Specification,
} from "./specification.ts";

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
  specification: Specification = NO_SPECIFICATION;
  /** The current run started while State Flow's tools could not be active: it runs as ordinary Pi. */
  unequipped = false;
  readonly discarded = new Set<number>();
  private readonly emitted: ResolutionEmitted[] = [];

  /** The branch's episode actor (it spawns the run's resolution); read when used, since it is created after this. */
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
   * A run begins (a user prompt, or a message another extension sent with triggerTurn); true when
   * it is an enabled run (the host then adds the protocol and anchor).
   */
  started(trigger: RunTrigger): boolean {
    this.discarded.clear();
    this.unequipped = isToolsActive(this.episodeActor().getSnapshot()) && this.host.missingTools().length > 0;
    if (this.unequipped || !this.beginResolution()) return false;
    this.specification = specificationForRun(this.specification, trigger);
    this.knowledge.startDiscovery();
    return true;
  }

  /** Names what started a run the host could not name when it began. */
  source(source: string): void {
    this.specification = withRunSource(this.specification, source);
  }

  /**
   * A user message Pi delivered inside the run (steering, a queued follow-up) is added to the
   * specification. Once the run's answer was resolved, it asks for another answer: a fresh
   * resolution, so that answer too is resolved before it becomes the response.
   */
  userMessage(text: string): void {
    const resolution = runResolution(this.episodeActor().getSnapshot());
    if (!resolution || !this.binding.state || this.unequipped) return;
    this.specification = withUserMessage(this.specification, text);
    if (isResolutionSettled(resolution.getSnapshot())) this.beginResolution();
  }

  private beginResolution(): boolean {
    this.episodeActor().send({ type: "RUN_STARTED" });
    const resolution = runResolution(this.episodeActor().getSnapshot());
    if (!resolution || !this.binding.state) return false;
    resolution.on("*", (e) => this.emitted.push(e as ResolutionEmitted));
    return true;
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
    for (const effect of this.emitted.splice(0)) {
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
   * turn_end: an eligible complete answer is committed as response (the resolution's
   * `commitResponse` actor); this waits until that commit has settled.
   */
  async turnEnd(): Promise<void> {
    const resolution = this.activeResolution();
    if (!resolution) return;
    resolution.send({ type: "TURN_END" });
    await waitFor(resolution, (snapshot) => !snapshot.matches("committing"));
    for (const effect of this.emitted.splice(0)) {
      if (effect.type === "resolution.commitFailed")
        this.host.notify(`State Flow could not commit the response: ${effect.error}`, "error");
    }
  }

  ended(): void {
    if (this.activeResolution()) this.toResolution({ type: "RUN_ENDED" });
    this.emitted.splice(0);
  }

  /** Logs a refused patch_state call with the run's resolution position (opt-in diagnostics). */
  patchRefused(record: Omit<DiagnosticRecord, "kind">): void {
    const resolution = runResolution(this.episodeActor().getSnapshot());
    this.diagnostics.write({
      kind: "rejected-patch",
      ...record,
      attempt: resolution ? steersUsed(resolution.getSnapshot()) : null,
      eligible: resolution ? isTerminalEligible(resolution.getSnapshot()) : null,
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
      const provenance = knowledge?.owed(new Date());
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
      this.toResolution({ type: "PATCH_REJECTED" });
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
      this.toResolution({ type: "PATCH_REJECTED" });
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

  /** The run's resolution position, for the runtime context. */
  resolutionView(): { eligible: boolean; steers: number } | null {
    const resolution = runResolution(this.episodeActor().getSnapshot());
    if (!resolution) return null;
    const snapshot = resolution.getSnapshot();
    return { eligible: isTerminalEligible(snapshot), steers: steersUsed(snapshot) };
  }

  /** The current run's resolution actor while its run is still being resolved. */
  private activeResolution() {
    const resolution = runResolution(this.episodeActor().getSnapshot());
    return resolution && !isResolutionSettled(resolution.getSnapshot()) ? resolution : null;
  }

  private toResolution(event: ResolutionEvent): void {
    runResolution(this.episodeActor().getSnapshot())?.send(event);
  }
}
