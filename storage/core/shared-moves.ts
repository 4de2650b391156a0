// What another session changed in a shared scope, between the view a branch held and the view it
// adopted: the paths added, changed and removed (`section.key`, or `response`), and which
// transitions did it. Pure. The run's runtime context says this in a few lines, so a model that
// adopted a newer global or cwd state at its run's start is told what moved instead of finding out.

import { canonicalJson, type JsonObject, type JsonValue } from "./json.ts";
import type { ScopeState } from "./scope-state.ts";
import type { ScopeStream, TemporalView } from "./temporal.ts";

/** (machines/run.ts declares the same shape for the run's context: machines import nothing from storage.) */
export interface SharedMove {
  scope: "global" | "cwd";
  /** Transitions in the scope's retained tail the earlier view did not hold (0: folded, or replaced wholesale). */
  transitions: number;
  /** The scope's newest transition now: its identity and step in the lineage that wrote it. */
  newest: { id: string; step: number } | null;
  added: string[];
  changed: string[];
  removed: string[];
}

const SECTIONS = ["artifacts", "contract", "working"] as const;

function same(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}

function pathChanges(before: ScopeState, after: ScopeState): Pick<SharedMove, "added" | "changed" | "removed"> {
  const added: string[] = [];
  const changed: string[] = [];
  const removed: string[] = [];
  for (const section of SECTIONS) {
    const b = before[section] as JsonObject;
    const a = after[section] as JsonObject;
    for (const key of Object.keys(a)) {
      if (!(key in b)) added.push(`${section}.${key}`);
      else if (!same(b[key], a[key])) changed.push(`${section}.${key}`);
    }
    for (const key of Object.keys(b)) if (!(key in a)) removed.push(`${section}.${key}`);
  }
  if (before.response !== after.response) (before.response === "" ? added : changed).push("response");
  return { added, changed, removed };
}

function newestOf(stream: ScopeStream): { id: string; step: number } | null {
  const last = stream.tail.at(-1);
  if (last) return { id: last.id, step: last.step };
  const through = stream.checkpoint.through;
  return through.id === "genesis" ? null : { id: through.id, step: through.step };
}

/** The shared scopes whose state differs between the two views, oldest-first scope order (global, cwd). */
export function sharedMoves(before: TemporalView, after: TemporalView): SharedMove[] {
  const moves: SharedMove[] = [];
  for (const scope of ["global", "cwd"] as const) {
    const b = before.current[scope];
    const a = after.current[scope];
    if (same(b as unknown as JsonObject, a as unknown as JsonObject)) continue;
    const known = new Set([
      before.streams[scope].checkpoint.through.id,
      ...before.streams[scope].tail.map((r) => r.id),
    ]);
    const transitions = after.streams[scope].tail.filter((r) => !known.has(r.id)).length;
    moves.push({ scope, transitions, newest: newestOf(after.streams[scope]), ...pathChanges(b, a) });
  }
  return moves;
}
