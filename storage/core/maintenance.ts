// Optional bounded artifact maintenance: which otherwise-fresh but old artifacts to recompile
// next, within strict count and byte ceilings. Pure: it takes discovery's metadata, provenance and
// artifacts and returns a plan; it never reads, compiles or modifies a source.
//
// Why this shape: correctness comes first, so any path the invalidation plan lists (new, changed,
// malformed, compiler-stale, explicitly refreshed) is never a maintenance candidate; explicit full
// refresh goes through that plan, outside these budgets. Among the rest, an artifact whose age is
// unknown (compiledAt missing or unparseable) is the least known and ranks first, then the oldest
// compiledAt, then the path, so the order is total and deterministic. Source bytes bound the
// tokenizer input conservatively, so the byte ceiling is applied to them.

import { compareSourcePaths } from "./artifacts.ts";
import { StateFlowError } from "./errors.ts";
import { planArtifactInvalidations, type FreshnessInput } from "./invalidation.ts";
import { parseTimestamp, provenanceEvidence } from "./provenance.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** Ceilings of one maintenance pass. Zero is allowed for each and admits nothing (bytes: only empty sources). */
export interface MaintenanceBudget {
  /** At most this many sources. */
  readonly maxSources?: number;
  /** At most this many source bytes in total. */
  readonly maxBytes?: number;
  /** Only artifacts compiled at least this many days ago (or of unknown age). */
  readonly minAgeDays?: number;
}

export const MAINTENANCE_DEFAULTS = Object.freeze({ maxSources: 1, maxBytes: 16 * 1024, minAgeDays: 30 });

export interface MaintenanceCandidate {
  readonly path: string;
  readonly bytes: number;
  /** The recorded compile time, or null when it is missing or unparseable. */
  readonly compiledAt: string | null;
}

export interface MaintenancePlan {
  /** What to recompile now, in rank order, within the budget. */
  readonly selected: MaintenanceCandidate[];
  /** Eligible but outside this pass's budget, in rank order. */
  readonly deferred: MaintenanceCandidate[];
}

export interface MaintenanceInput extends FreshnessInput {
  /** The current time in milliseconds since the epoch (the planner has no clock of its own). */
  readonly now: number;
  readonly budget?: MaintenanceBudget;
}

function refuse(message: string): never {
  throw new StateFlowError("invalid-plan-input", message);
}

function ceiling(value: number | undefined, fallback: number, name: string, integer: boolean): number {
  if (value === undefined) return fallback;
  const valid = integer ? Number.isSafeInteger(value) : Number.isFinite(value);
  if (!valid || value < 0) refuse(`${name} must be a non-negative ${integer ? "integer" : "number"}, not ${value}`);
  return value;
}

interface Ranked extends MaintenanceCandidate {
  readonly at: number | undefined;
}

/** Unknown age first, then oldest compile time, then path. */
function byRank(a: Ranked, b: Ranked): number {
  if (a.at === undefined || b.at === undefined) {
    if (a.at !== b.at) return a.at === undefined ? -1 : 1;
  } else if (a.at !== b.at) {
    return a.at - b.at;
  }
  return compareSourcePaths(a.path, b.path);
}

/**
 * Plans one bounded maintenance pass. Candidates are discovered sources with an artifact that the
 * invalidation plan does not list and whose compiledAt is missing, unparseable, or at least
 * `minAgeDays` before `now`. Ranked candidates are admitted while both ceilings hold; one that
 * does not fit the remaining bytes is deferred and smaller later ones may still be admitted, so one
 * oversized source cannot starve maintenance.
 */
export function planArtifactMaintenance(input: MaintenanceInput): MaintenancePlan {
  if (!Number.isFinite(input.now)) refuse(`now must be a finite time in milliseconds, not ${input.now}`);
  const budget = input.budget ?? {};
  const maxSources = ceiling(budget.maxSources, MAINTENANCE_DEFAULTS.maxSources, "maxSources", true);
  const maxBytes = ceiling(budget.maxBytes, MAINTENANCE_DEFAULTS.maxBytes, "maxBytes", true);
  const minAgeDays = ceiling(budget.minAgeDays, MAINTENANCE_DEFAULTS.minAgeDays, "minAgeDays", false);
  const invalid = new Set(planArtifactInvalidations(input).invalidations.map((i) => i.path));
  const ranked: Ranked[] = [];
  for (const [path, source] of input.sources) {
    if (invalid.has(path) || !Object.prototype.hasOwnProperty.call(input.artifacts, path)) continue;
    const compiledAt = provenanceEvidence(input.provenance, path, input.artifacts[path]).compiledAt;
    const recorded = compiledAt.status === "valid" ? compiledAt.value : null;
    const at = recorded === null ? undefined : parseTimestamp(recorded);
    if (at !== undefined && input.now - at < minAgeDays * DAY_MS) continue;
    ranked.push({ path, bytes: source.bytes, compiledAt: at === undefined ? null : recorded, at });
  }
  ranked.sort(byRank);
  const selected: MaintenanceCandidate[] = [];
  const deferred: MaintenanceCandidate[] = [];
  let bytes = 0;
  for (const { path, bytes: size, compiledAt } of ranked) {
    const candidate = { path, bytes: size, compiledAt };
    if (selected.length < maxSources && bytes + size <= maxBytes) {
      selected.push(candidate);
      bytes += size;
    } else {
      deferred.push(candidate);
    }
  }
  return { selected, deferred };
}
