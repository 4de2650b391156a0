// What a successful read obliges (spec 001, "Artifact compilation and acquisition" and "Skill
// compilation"): compiler output at the exact path in the next patch_state — a compact global
// artifact for a stale Knowledge source, a cwd artifact with kind "skill" and a non-empty
// compilation for every SKILL.md. The runtime records the hash it observed and the compiler
// revision in that scope's provenance in the same cohort; a patch_state without the artifact is
// refused and says exactly what to add. Pure over the obligations and the patch.

import type { PatchSet } from "../storage/core/cohort.ts";
import { StateFlowError } from "../storage/core/errors.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "../storage/core/json.ts";
import { ARTIFACT_COMPILER_REVISION, type ProvenanceRecord } from "../storage/core/provenance.ts";

/** The compiler revision a Skill's cwd provenance records. */
export const SKILL_COMPILER_REVISION = "skill-artifact-v1";

export interface CompilationObligation {
  /** Where the compilation goes: global for Knowledge, cwd for a Skill. */
  readonly scope: "global" | "cwd";
  /** The exact source path the read returned (an artifact key). */
  readonly path: string;
  /** `sha256:<hex>` of the bytes at the read; null when they could not be hashed. */
  readonly hash: string | null;
  /** Why the read obliges: an invalidation reason, or "skill". */
  readonly reason: string;
  /** What discovery hashed before the read (Knowledge's rehydration binding). */
  readonly candidateHash?: string;
}

const isSkill = (o: CompilationObligation) => o.reason === "skill";

function meets(o: CompilationObligation, entry: JsonValue | undefined): boolean {
  if (!isJsonObject(entry) || o.hash === null) return false;
  if (!isSkill(o)) return true;
  return entry.kind === "skill" && isJsonObject(entry.compilation) && Object.keys(entry.compilation).length > 0;
}

/** The obligations this patch leaves unmet. */
export function unmetObligations(obligations: Iterable<CompilationObligation>, set: PatchSet): CompilationObligation[] {
  return [...obligations].filter((o) => !meets(o, set.patches[o.scope]?.artifacts?.[o.path]));
}

function exampleOf(o: CompilationObligation): JsonObject {
  return isSkill(o)
    ? { description: "<when to apply it>", kind: "skill", compilation: { applies: "<…>", constraints: "<…>" } }
    : { description: "<what it holds, when it is useful>" };
}

export function compilationRequired(unmet: readonly CompilationObligation[]): StateFlowError {
  const unhashed = unmet.filter((o) => o.hash === null);
  if (unhashed.length > 0) {
    return new StateFlowError(
      "compilation-required",
      `The bytes of ${unhashed.map((o) => o.path).join(", ")} could not be hashed after your read, so its ` +
        "compilation cannot be recorded; read it again, then patch its artifact. Nothing was written.",
    );
  }
  const patch: Record<string, { artifacts: JsonObject }> = {};
  for (const o of unmet) (patch[o.scope] ??= { artifacts: {} }).artifacts[o.path] = exampleOf(o);
  const listed = unmet.map((o) => `${o.path} (${isSkill(o) ? "a Skill" : o.reason})`).join(", ");
  const why = unmet.some(isSkill)
    ? 'a Skill read needs a cwd artifact with kind "skill" and a non-empty compilation of its applicability, ' +
      "routing, constraints and failure conditions"
    : "a source listed under Artifact invalidations needs its global artifact";
  return new StateFlowError(
    "compilation-required",
    `You read ${listed}: ${why}, in this same patch_state. Add ${JSON.stringify(patch)} — compiled, not the ` +
      "source's text — with your other changes; nothing was written.",
  );
}

/** The provenance an accepted cohort records for the obligations it met, per scope. */
export function provenanceOf(
  obligations: Iterable<CompilationObligation>,
  compiledAt: Date,
): Partial<Record<"global" | "cwd", Record<string, ProvenanceRecord>>> {
  const records: Partial<Record<"global" | "cwd", Record<string, ProvenanceRecord>>> = {};
  for (const o of obligations) {
    if (o.hash === null) continue;
    (records[o.scope] ??= {})[o.path] = {
      sourceHash: o.hash,
      compilerRevision: isSkill(o) ? SKILL_COMPILER_REVISION : ARTIFACT_COMPILER_REVISION,
      compiledAt: compiledAt.toISOString(),
    };
  }
  return records;
}

/** The merge patch that turns `previous` into exactly `next`: a null for every field `next` drops, at any depth. */
function replacement(previous: JsonObject, next: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const key of Object.keys(previous)) if (!Object.prototype.hasOwnProperty.call(next, key)) patch[key] = null;
  for (const [key, value] of Object.entries(next)) {
    const before = previous[key];
    patch[key] = isJsonObject(before) && isJsonObject(value) ? replacement(before, value) : value;
  }
  return patch;
}

/**
 * A Skill's refresh replaces its whole old artifact: merge patches merge objects and delete with
 * null, so the patch's entry becomes the merge patch from the current entry to exactly the new one.
 */
export function replacingSkillArtifacts(
  set: PatchSet,
  obligations: Iterable<CompilationObligation>,
  current: (scope: "cwd") => JsonObject,
): PatchSet {
  const skills = [...obligations].filter(isSkill);
  const artifacts = set.patches.cwd?.artifacts;
  if (skills.length === 0 || !artifacts) return set;
  const old = current("cwd");
  const replaced: JsonObject = { ...artifacts };
  for (const { path } of skills) {
    const previous = old[path];
    const next = artifacts[path];
    if (isJsonObject(previous) && isJsonObject(next)) replaced[path] = replacement(previous, next);
  }
  return { ...set, patches: { ...set.patches, cwd: { ...set.patches.cwd, artifacts: replaced } } };
}
