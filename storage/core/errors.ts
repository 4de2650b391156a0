// Named errors for the temporal core. Every refusal carries a stable `code` (for callers and
// tests), the `path` of the offending value where there is one, and a message that says what
// rule was broken and what to do instead.

import type { BaseIssue } from "valibot";

export type StateFlowErrorCode =
  | "invalid-json"
  | "invalid-patch"
  | "invalid-state"
  | "empty-cohort"
  | "no-op-cohort"
  | "invalid-document"
  | "incomplete-pair"
  | "oversized-tail"
  | "no-op-record"
  | "invalid-lineage"
  | "joined-histories"
  /** A shared scope this cohort patches advanced in another session since the branch read it. */
  | "shared-scope-advanced"
  | "replay-mismatch"
  | "offset-unavailable"
  | "offset-out-of-contract"
  /** An artifact entry breaks the artifact shape (description, kind, compilation, tags). */
  | "invalid-artifact"
  /** A model-authored patch carries provenance fields only the runtime records. */
  | "forged-provenance"
  /** Provenance the runtime is about to record, or a section it cannot update, is not well formed. */
  | "invalid-provenance"
  /** A freshness or maintenance planner was given inputs outside its contract. */
  | "invalid-plan-input"
  /** A patch_state after reading a stale Knowledge source does not compile it. */
  | "compilation-required"
  /** A global memory_promotions entry a patch leaves without status, owner or (accepted) evidence. */
  | "invalid-promotion"
  /** A patch recreating a retired store (contract.compiled_skills). */
  | "retired-store"
  /** A promotion removing a body without an accepted record proving an identical copy elsewhere. */
  | "promotion-unproven"
  /** A refresh asked for a path that Knowledge discovery does not find. */
  | "unknown-knowledge-source";

export class StateFlowError extends Error {
  readonly code: StateFlowErrorCode;
  readonly path: string | undefined;

  constructor(code: StateFlowErrorCode, message: string, path?: string) {
    super(path ? `${path}: ${message}` : message);
    this.name = "StateFlowError";
    this.code = code;
    this.path = path;
  }
}

/** Joins a JSON path the way error messages show it: `session.working.items[3]`. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return parent ? `${parent}.${key}` : key;
  return `${parent}[${JSON.stringify(key)}]`;
}

/** The message of anything thrown (an Error's message, else its string form). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The dotted/bracketed path of a valibot issue below `base` (where a refusal points). */
export function issuePath(base: string, issue: BaseIssue<unknown>): string {
  let path = base;
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    path = childPath(path, typeof key === "number" ? key : String(key));
  }
  return path;
}
