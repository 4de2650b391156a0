// One run's view of Knowledge (spec 001, "Artifact compilation and acquisition"): the discovery it
// started, the global provenance as it read it, the invalidation plan over the branch's global
// artifacts, and the compilations its reads oblige. FlowRuntime owns one per enabled run and asks
// it; the transitions it implies (a compilation's provenance, a vanished source's removal) are
// published by the runtime's store, in its cohorts.

import { readFile } from "node:fs/promises";
import type { PatchSet } from "../storage/core/cohort.ts";
import { errorMessage } from "../storage/core/errors.ts";
import {
  planArtifactInvalidations,
  type ArtifactInvalidation,
  type InvalidationPlan,
} from "../storage/core/invalidation.ts";
import type { JsonObject } from "../storage/core/json.ts";
import type { ProvenanceRecord } from "../storage/core/provenance.ts";
import { decodeProvenance } from "../storage/core/provenance.ts";
import { planRehydration } from "../storage/core/rehydration.ts";
import { readTemporalState } from "../storage/core/temporal.ts";
import { scopeFiles } from "../storage/layout.ts";
import type { BranchState } from "../storage/state-store.ts";
import { provenanceOf, unmetObligations, type CompilationObligation } from "./compilation-obligations.ts";
import { discoverKnowledge, sourceHash, type KnowledgeDiscovery, type KnowledgeSource } from "./knowledge-discovery.ts";

export type Invalidations = readonly ArtifactInvalidation[] | { readonly unavailable: string };

export class KnowledgeRun {
  private readonly discovery: Promise<void>;
  private found: KnowledgeDiscovery | { unavailable: string } | null = null;
  /** The discovered sources by exact path (built once, when discovery completes). */
  private sources: ReadonlyMap<string, KnowledgeSource> = new Map();
  /** The global meta.json read live at the run's start (null: absent); undefined once superseded. */
  private liveProvenance: Buffer | null | undefined = undefined;
  private readonly obligations = new Map<string, CompilationObligation>();

  /** Starts discovery under `root` and reads the global provenance at `globalMeta` (absolute) now. */
  constructor(root: string, globalMeta: string | null) {
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
    const recorded = runtime.basis.files.get(scopeFiles("global", runtime.identity).meta) ?? null;
    return planArtifactInvalidations({
      root: found.root,
      sources: this.sources,
      artifacts: readTemporalState(runtime.view, 0, "global").state.artifacts as JsonObject,
      provenance: decodeProvenance(this.liveProvenance !== undefined ? this.liveProvenance : recorded),
    });
  }

  invalidations(runtime: BranchState): Invalidations {
    const plan = this.plan(runtime);
    return "unavailable" in plan ? plan : plan.invalidations;
  }

  /**
   * A successful read of `path` (absolute). When the run's rehydration plan (storage/core/rehydration.ts)
   * names it, the next patch_state must compile it; the bytes' hash is taken now, as the read saw
   * them, beside the candidate hash discovery planned with.
   */
  sourceRead(runtime: BranchState, path: string): void {
    const plan = this.plan(runtime);
    if ("unavailable" in plan) return;
    const target = planRehydration(plan, this.sources).find((t) => t.path === path);
    const hash = target ? sourceHash(path) : null;
    if (target && hash) {
      this.obligations.set(path, {
        scope: target.scope,
        path,
        hash,
        reason: target.reason,
        candidateHash: target.candidateHash,
      });
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

  /** The provenance the next accepted patch_state records for the reads it compiles. */
  owed(now: Date): Partial<Record<"global" | "cwd", Record<string, ProvenanceRecord>>> | undefined {
    return this.obligations.size > 0 ? provenanceOf(this.obligations.values(), now) : undefined;
  }

  /** The accepted cohort compiled these paths: nothing more is owed for them. */
  compiled(paths: Iterable<string>): void {
    for (const path of paths) this.obligations.delete(path);
  }
}
