// What a successful read of a stale Knowledge source obliges (spec 001, "Artifact compilation and
// acquisition"): compact global compiler output at that exact path in the next patch_state
// cohort. The runtime records the hash it observed and `artifact-v1` in the global scope's
// provenance in that same cohort; a patch_state without the artifact is refused and says exactly
// what to add. Pure over the obligations and the patch.

import type { PatchSet } from "../core/cohort.ts";
import { StateFlowError } from "../core/errors.ts";
import { isJsonObject } from "../core/json.ts";
import { ARTIFACT_COMPILER_REVISION, type ProvenanceRecord } from "../core/provenance.ts";

export interface CompilationObligation {
  /** The exact source path the read returned (an artifact key). */
  readonly path: string;
  /** `sha256:<hex>` of the bytes at the read. */
  readonly hash: string;
  /** Why the source was listed under Artifact invalidations. */
  readonly reason: string;
  /** What discovery hashed before the read (the rehydration plan's binding); `hash` is what the read saw. */
  readonly candidateHash?: string;
}

/** The obligations this patch leaves unmet: no global artifact object at the path. */
export function unmetObligations(obligations: Iterable<CompilationObligation>, set: PatchSet): CompilationObligation[] {
  const artifacts = set.patches.global?.artifacts;
  return [...obligations].filter((o) => !(artifacts && isJsonObject(artifacts[o.path])));
}

export function compilationRequired(unmet: readonly CompilationObligation[]): StateFlowError {
  const example = Object.fromEntries(unmet.map((o) => [o.path, { description: "<what it holds, when it is useful>" }]));
  const listed = unmet.map((o) => `${o.path} (${o.reason})`).join(", ");
  return new StateFlowError(
    "compilation-required",
    `You read ${listed}, listed under Artifact invalidations: this patch_state must compile ` +
      `${unmet.length === 1 ? "it" : "them"} too. Add to this same call ` +
      `${JSON.stringify({ global: { artifacts: example } })} — a compact routing description, not the ` +
      "source's text — with your other changes; nothing was written.",
  );
}

/** The provenance an accepted cohort records for the obligations it met. */
export function provenanceOf(
  obligations: Iterable<CompilationObligation>,
  compiledAt: Date,
): Record<string, ProvenanceRecord> {
  const records: Record<string, ProvenanceRecord> = {};
  for (const o of obligations) {
    records[o.path] = {
      sourceHash: o.hash,
      compilerRevision: ARTIFACT_COMPILER_REVISION,
      compiledAt: compiledAt.toISOString(),
    };
  }
  return records;
}
