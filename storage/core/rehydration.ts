// The explicit rehydration planner (spec 001, "Materialized-first policy"): which sources the
// model may (re)acquire in this run, each bound to the scope its compilation goes to, the exact
// path, the candidate hash discovery saw and the reason. It plans reads; the read itself is Pi's
// own `read` tool (State Flow registers no reading tool of its own), and a read of a planned
// path is what obliges the compilation (runtime/compilation-obligations.ts). Correctness
// invalidations come first; bounded maintenance selections follow, never displacing them.

import { compareSourcePaths } from "./artifacts.ts";
import type { DiscoveredSource, InvalidationPlan, InvalidationReason } from "./invalidation.ts";
import type { MaintenancePlan } from "./maintenance.ts";

export interface RehydrationTarget {
  /** Knowledge compiles into the global scope. */
  readonly scope: "global";
  readonly path: string;
  /** What discovery hashed; a read that sees other bytes records those instead (the source moved on). */
  readonly candidateHash: string;
  readonly reason: InvalidationReason | "maintenance";
}

export function planRehydration(
  plan: InvalidationPlan,
  sources: ReadonlyMap<string, DiscoveredSource>,
  maintenance?: MaintenancePlan,
): RehydrationTarget[] {
  const targets: RehydrationTarget[] = [];
  const planned = new Set<string>();
  for (const { path, reason } of plan.invalidations) {
    const source = sources.get(path);
    if (!source) continue;
    targets.push({ scope: "global", path, candidateHash: source.hash, reason });
    planned.add(path);
  }
  const upkeep = (maintenance?.selected ?? [])
    .filter((candidate) => !planned.has(candidate.path) && sources.has(candidate.path))
    .map((candidate) => candidate.path)
    .sort(compareSourcePaths);
  for (const path of upkeep) {
    targets.push({ scope: "global", path, candidateHash: sources.get(path)!.hash, reason: "maintenance" });
  }
  return targets;
}
