// One run's view of Knowledge (spec 001, "Artifact compilation and acquisition"): the discovery it
// started, the global provenance as it read it, the invalidation plan over the branch's global
// artifacts (with the refreshes a person asked for), this run's bounded maintenance selection, and
// the compilations its reads oblige. FlowRuntime owns one per enabled run and asks it; the
// transitions it implies (a compilation's provenance, a vanished source's removal) are published
// by the runtime's store, in its cohorts.
//
// Maintenance is selected once per run (planArtifactMaintenance, default budget): a run that
// recompiles its selection does not move on to the next old artifact, so each run reads at most
// the budget. A read of a discovered source nothing lists obliges nothing, but when the same run
// patches that source's global artifact, it is the model's own refresh and its provenance is
// recorded like a planned one.

import { readFile } from "node:fs/promises";
import type { PatchSet } from "../storage/core/cohort.ts";
import { errorMessage } from "../storage/core/errors.ts";
import {
  planArtifactInvalidations,
  type ArtifactInvalidation,
  type FreshnessInput,
  type InvalidationPlan,
} from "../storage/core/invalidation.ts";
import type { JsonObject } from "../storage/core/json.ts";
import type { ProvenanceRecord } from "../storage/core/provenance.ts";
import { decodeProvenance } from "../storage/core/provenance.ts";
import { planArtifactMaintenance, type MaintenancePlan } from "../storage/core/maintenance.ts";
import { planRehydration } from "../storage/core/rehydration.ts";
import { readTemporalState } from "../storage/core/temporal.ts";
import { scopeFiles } from "../storage/layout.ts";
import type { BranchState } from "../storage/state-store.ts";
import { provenanceOf, unmetObligations, type CompilationObligation } from "./compilation-obligations.ts";
import { discoverKnowledge, sourceHash, type KnowledgeDiscovery, type KnowledgeSource } from "./knowledge-discovery.ts";

/** The plan the model is shown: correctness invalidations, then this run's maintenance selection. */
export type PlannedRead = ArtifactInvalidation | { readonly path: string; readonly reason: "maintenance" };
export type Invalidations = readonly PlannedRead[] | { readonly unavailable: string };

export class KnowledgeRun {
  private readonly discovery: Promise<void>;
  private found: KnowledgeDiscovery | { unavailable: string } | null = null;
  /** The discovered sources by exact path (built once, when discovery completes). */
  private sources: ReadonlyMap<string, KnowledgeSource> = new Map();
  /** The global meta.json read live at the run's start (null: absent); undefined once superseded. */
  private liveProvenance: Buffer | null | undefined = undefined;
  private readonly obligations = new Map<string, CompilationObligation>();
  /** Reads of discovered sources nothing listed: recorded only if the run patches their artifact. */
  private readonly offered = new Map<string, CompilationObligation>();
  /** Paths a person asked to refresh (shared with the branch's upkeep; a compilation settles one). */
  private readonly refresh: Set<string>;
  /** This run's maintenance selection, made once (null: not yet). */
  private maintenanceSelection: MaintenancePlan | null = null;
  private readonly maintained = new Set<string>();

  /**
   * Starts discovery under `root` and reads the global provenance at `globalMeta` (absolute) now.
   * `refresh` holds the paths asked to be refreshed; this run deletes each one it compiles.
   */
  constructor(root: string, globalMeta: string | null, refresh: Set<string> = new Set()) {
    this.refresh = refresh;
    const provenance = globalMeta ? readFile(globalMeta).catch(() => null) : Promise.resolve(null);
    const discovered = discoverKnowledge(root).then(
      (found) => {
        this.found = found;
        this.sources = new Map(found.sources.map((source) => [source.path, source]));
      },
      (error: unknown) => (this.found = { unavailable: `discovery failed: ${errorMessage(error)}` }),
    );
    this.discovery = Promise.all([discovered, provenance]).then(([, bytes]) => {
      this.liveProvenance = bytes;
    });
  }

  /** Resolves when discovery is complete (the run machine awaits it once, in `knowledge.discovering`). */
  async ready(): Promise<void> {
    await this.discovery;
  }

  /** The branch published: its newest cohort's basis now holds the newer global meta.json. */
  published(): void {
    this.liveProvenance = undefined;
  }

  /**
   * The plan over the branch's global artifacts and the global provenance: as the run read it live
   * at its start (other sessions and a user's hand record there too), or, once the branch
   * published since, as its newest cohort holds it (read live at that publication).
   */
  plan(runtime: BranchState): InvalidationPlan | { unavailable: string } {
    const found = this.found;
    if (found === null) return { unavailable: "Knowledge discovery has not completed for this run" };
    if ("unavailable" in found) return found;
    return planArtifactInvalidations(this.freshnessInput(runtime)!);
  }

  /** What the planners judge: discovery, the global artifacts and provenance, the refreshes asked for. */
  private freshnessInput(runtime: BranchState): FreshnessInput | null {
    const found = this.found;
    if (found === null || "unavailable" in found) return null;
    const recorded = runtime.basis.files.get(scopeFiles("global", runtime.identity).meta) ?? null;
    return {
      root: found.root,
      sources: this.sources,
      artifacts: readTemporalState(runtime.view, 0, "global").state.artifacts as JsonObject,
      provenance: decodeProvenance(this.liveProvenance !== undefined ? this.liveProvenance : recorded),
      refresh: this.refresh,
    };
  }

  /** This run's bounded maintenance selection, less what the run has recompiled since. */
  maintenance(runtime: BranchState): MaintenancePlan {
    if (this.maintenanceSelection === null) {
      const input = this.freshnessInput(runtime);
      if (input === null) return { selected: [], deferred: [] };
      this.maintenanceSelection = planArtifactMaintenance({ ...input, now: Date.now() });
    }
    const { selected, deferred } = this.maintenanceSelection;
    return { selected: selected.filter((c) => !this.maintained.has(c.path)), deferred };
  }

  invalidations(runtime: BranchState): Invalidations {
    const plan = this.plan(runtime);
    if ("unavailable" in plan) return plan;
    const listed = new Set(plan.invalidations.map((i) => i.path));
    const upkeep = this.maintenance(runtime)
      .selected.filter((c) => !listed.has(c.path))
      .map((c) => ({ path: c.path, reason: "maintenance" as const }));
    return [...plan.invalidations, ...upkeep];
  }

  /**
   * A successful read of `path` (absolute). When the run's rehydration plan (storage/core/rehydration.ts)
   * names it, the next patch_state must compile it; the bytes' hash is taken now, as the read saw
   * them, beside the candidate hash discovery planned with.
   */
  sourceRead(runtime: BranchState, path: string): void {
    const plan = this.plan(runtime);
    if ("unavailable" in plan) return;
    const target = planRehydration(plan, this.sources, this.maintenance(runtime)).find((t) => t.path === path);
    const source = this.sources.get(path);
    const hash = target || source ? sourceHash(path) : null;
    if (target && hash) {
      this.obligations.set(path, {
        scope: target.scope,
        path,
        hash,
        reason: target.reason,
        candidateHash: target.candidateHash,
      });
    } else if (source && hash) {
      this.offered.set(path, { scope: "global", path, hash, reason: "refresh", candidateHash: source.hash });
    }
  }

  /** The obligations `set` leaves unmet (the patch must then be refused). */
  unmet(set: PatchSet): CompilationObligation[] {
    return unmetObligations(this.obligations.values(), set);
  }

  /**
   * A successful read of a `SKILL.md` (absolute, as executed): the next patch_state must compile it
   * into a cwd artifact (kind "skill", a non-empty compilation); its bytes are hashed now.
   */
  skillRead(path: string): void {
    this.obligations.set(path, { scope: "cwd", path, hash: sourceHash(path), reason: "skill" });
  }

  /** Every obligation still open (the patch_state that meets them records their provenance). */
  open(): CompilationObligation[] {
    return [...this.obligations.values()];
  }

  /**
   * The provenance `set`, once accepted, records for the reads it compiles: every obligation (a
   * patch that leaves one unmet is refused before), and each offered read whose artifact it carries.
   */
  owed(now: Date, set: PatchSet): Partial<Record<"global" | "cwd", Record<string, ProvenanceRecord>>> | undefined {
    const own = [...this.offered.values()].filter((o) => unmetObligations([o], set).length === 0);
    const compiled = [...this.obligations.values(), ...own];
    return compiled.length > 0 ? provenanceOf(compiled, now) : undefined;
  }

  /** The accepted cohort compiled these paths: nothing more is owed, planned or asked for them. */
  compiled(paths: Iterable<string>): void {
    for (const path of paths) {
      this.obligations.delete(path);
      this.offered.delete(path);
      this.refresh.delete(path);
      this.maintained.add(path);
    }
  }
}
