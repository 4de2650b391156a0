// Legacy Skill compilations (spec 001 "Skill compilation"): entries of the retired
// `contract.compiled_skills` store become Skill artifacts keyed by the same SKILL.md path, with
// their freshness evidence moved into provenance. Behaviour is preserved — the compilation still
// stands in for rereading — and evidence is never invented: a hash the retired entry carried is
// kept, the source's current bytes stand in only when it carried none, and a source that cannot be
// read marks the record unverified. Pure over the scope states and a source hasher.
//
// Where they go: a global entry stays global (a user-level Skill serves every cwd); cwd and
// session entries go to cwd, the home 001 gives Skill compilations. An artifact already at the
// path that is a complete Skill compilation wins over the retired entry, which is then dropped.

import { isAbsolute, resolve } from "node:path";
import { isJsonObject, type JsonObject, type JsonValue } from "../storage/core/json.ts";
import { isSourceHash, parseTimestamp, type ProvenanceRecord } from "../storage/core/provenance.ts";
import type { ScopeName, ScopeState } from "../storage/core/scope-state.ts";
import { SKILL_COMPILER_REVISION } from "./compilation-obligations.ts";

type Target = "global" | "cwd";

export interface MigratedSkill {
  readonly path: string;
  readonly from: ScopeName;
  readonly to: Target;
  /** False when the source could not be read: its provenance is marked unverified. */
  readonly verified: boolean;
  /** True when a complete Skill artifact already held the path: the retired entry was dropped. */
  readonly superseded: boolean;
}

export interface LegacySkillPlan {
  /** patch_state-shaped input: the retired stores deleted, the artifacts added. */
  readonly input: Partial<Record<ScopeName, JsonObject>>;
  readonly provenance: Partial<Record<Target, Record<string, ProvenanceRecord>>>;
  readonly migrated: readonly MigratedSkill[];
}

const RETIRED_EVIDENCE = ["hash", "compiler", "compiled_at"] as const;

function isCompleteSkill(entry: JsonValue | undefined): boolean {
  return (
    isJsonObject(entry) &&
    entry.kind === "skill" &&
    isJsonObject(entry.compilation) &&
    Object.keys(entry.compilation).length > 0
  );
}

/** The artifact a retired entry becomes; the evidence fields it embedded are taken out of it. */
function artifactOf(path: string, value: JsonValue): JsonObject {
  const compilation: JsonObject = isJsonObject(value) ? { ...value } : { compiled: value };
  for (const field of RETIRED_EVIDENCE) delete compilation[field];
  const stated = compilation.description;
  delete compilation.description;
  const description =
    typeof stated === "string" && stated.trim() !== ""
      ? stated
      : `Skill ${path}, compiled before Skill artifacts existed (migrated from contract.compiled_skills)`;
  return {
    description,
    kind: "skill",
    compilation: Object.keys(compilation).length > 0 ? compilation : { compiled: "(empty legacy compilation)" },
  };
}

function provenanceOf(value: JsonValue, current: string | null): ProvenanceRecord {
  const embedded = isJsonObject(value) ? value : {};
  const hash = isSourceHash(embedded.hash) ? embedded.hash : undefined;
  const compiledAt =
    typeof embedded.compiled_at === "string" && parseTimestamp(embedded.compiled_at) !== undefined
      ? embedded.compiled_at
      : undefined;
  const record: ProvenanceRecord = { compilerRevision: SKILL_COMPILER_REVISION };
  const sourceHash = hash ?? current ?? undefined;
  if (sourceHash !== undefined) record.sourceHash = sourceHash;
  if (compiledAt !== undefined) record.compiledAt = compiledAt;
  if (current === null) record.unverified = true;
  return record;
}

/**
 * The runtime transition that retires every `contract.compiled_skills` store, or null when no
 * scope has one. `hashOf` hashes a source's current bytes (`sha256:<hex>`), null when unreadable;
 * relative legacy paths resolve against `cwd` for hashing but keep their key.
 */
export function planLegacySkills(
  states: Readonly<Record<ScopeName, ScopeState>>,
  cwd: string,
  hashOf: (path: string) => string | null,
): LegacySkillPlan | null {
  const order: readonly [ScopeName, Target][] = [
    ["global", "global"],
    ["cwd", "cwd"],
    ["session", "cwd"],
  ];
  const input: Partial<Record<ScopeName, JsonObject>> = {};
  const provenance: Partial<Record<Target, Record<string, ProvenanceRecord>>> = {};
  const migrated: MigratedSkill[] = [];
  const added: Record<Target, JsonObject> = { global: {}, cwd: {} };
  for (const [from, to] of order) {
    const store = states[from].contract.compiled_skills;
    if (store === undefined) continue;
    (input[from] ??= {}).contract = { compiled_skills: null };
    if (!isJsonObject(store)) continue;
    for (const [path, value] of Object.entries(store)) {
      const existing = added[to][path] ?? states[to].artifacts[path];
      const current = hashOf(isAbsolute(path) ? path : resolve(cwd, path));
      if (isCompleteSkill(existing)) {
        migrated.push({ path, from, to, verified: current !== null, superseded: true });
        continue;
      }
      added[to][path] = artifactOf(path, value);
      (provenance[to] ??= {})[path] = provenanceOf(value, current);
      migrated.push({ path, from, to, verified: current !== null, superseded: false });
    }
  }
  if (Object.keys(input).length === 0) return null;
  for (const to of ["global", "cwd"] as const) {
    if (Object.keys(added[to]).length > 0) (input[to] ??= {}).artifacts = added[to];
  }
  return { input, provenance, migrated };
}
