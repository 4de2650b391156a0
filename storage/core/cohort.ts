// Cohort staging: turns one patch_state call ({global?, cwd?, session?, final?}) into one
// validated transition against one basis. Every supplied scope shares the transition identity;
// nothing is written here (durable publication is the store's job) and inputs stay untouched.

import { randomUUID } from "node:crypto";
import { StateFlowError } from "./errors.ts";
import { isJsonObject, type JsonValue } from "./json.ts";
import { SCOPES, parseScopePatch, type ScopeName, type ScopePatch } from "./scope-state.ts";
import {
  applyTransition,
  headBoundary,
  type Boundary,
  type PatchRecord,
  type ScopeStream,
  type TemporalView,
  type TransitionRef,
} from "./temporal.ts";

export interface PatchSet {
  patches: Partial<Record<ScopeName, ScopePatch>>;
  final: boolean;
}

const RETIRED_KEYS: Record<string, string> = {
  scope: 'the retired {scope, patch} form is not accepted; name scopes directly, e.g. {"session":{"working":{…}}}',
  patch: 'the retired {scope, patch} form is not accepted; name scopes directly, e.g. {"session":{"working":{…}}}',
  unchanged: 'the retired unchanged form is not accepted; send {"final":true} alone when nothing changes',
};

/**
 * Validates patch_state arguments. `allowResponse` is for the runtime's own response capture;
 * model calls never set it.
 */
export function parsePatchSet(input: unknown, options: { allowResponse?: boolean } = {}): PatchSet {
  if (!isJsonObject(input as JsonValue) || Object.getPrototypeOf(input) !== Object.prototype) {
    throw new StateFlowError("invalid-patch", "patch_state takes an object {global?, cwd?, session?, final?}");
  }
  const record = input as Record<string, unknown>;
  const patches: Partial<Record<ScopeName, ScopePatch>> = {};
  let final = false;
  for (const key of Object.keys(record)) {
    if (key === "final") {
      if (typeof record.final !== "boolean") {
        throw new StateFlowError("invalid-patch", "final must be true or false", "final");
      }
      final = record.final;
    } else if ((SCOPES as readonly string[]).includes(key)) {
      patches[key as ScopeName] = parseScopePatch(record[key], key, { allowResponse: options.allowResponse ?? false });
    } else {
      throw new StateFlowError(
        "invalid-patch",
        RETIRED_KEYS[key] ?? "unknown field; patch_state takes only global, cwd, session and final",
        key,
      );
    }
  }
  if (Object.keys(patches).length === 0 && !final) {
    throw new StateFlowError("empty-cohort", "patch_state needs at least one of global, cwd, session, or final:true");
  }
  return { patches, final };
}

/** The semantic hash a stream's current state has (its newest record, else its checkpoint). */
function streamHash(stream: ScopeStream): string {
  return stream.tail[stream.tail.length - 1]?.hash ?? stream.checkpoint.hash;
}

export interface Cohort {
  transition: TransitionRef;
  /** What the cohort was validated against: the lineage head and every scope's semantic hash. */
  basis: { head: Boundary; hashes: Record<ScopeName, string> };
  records: Partial<Record<ScopeName, PatchRecord>>;
  unchanged: ScopeName[];
}

export interface StagedCohort {
  view: TemporalView;
  cohort: Cohort;
}

function newTransitionId(): string {
  return `t-${randomUUID()}`;
}

/**
 * Stages the scope patches of a parsed patch set as one transition. Throws `empty-cohort` when
 * no scope is supplied (final-only eligibility is not a transition) and `no-op-cohort` when no
 * supplied scope materially changes.
 */
export function stageCohort(
  view: TemporalView,
  patches: Partial<Record<ScopeName, ScopePatch>>,
  transitionId: string = newTransitionId(),
): StagedCohort {
  if (Object.keys(patches).length === 0) {
    throw new StateFlowError("empty-cohort", "no scope patch supplied; final-only eligibility creates no transition");
  }
  const basis = {
    head: headBoundary(view.lineage),
    hashes: {
      global: streamHash(view.streams.global),
      cwd: streamHash(view.streams.cwd),
      session: streamHash(view.streams.session),
    },
  };
  const result = applyTransition(view, patches, transitionId);
  return {
    view: result.view,
    cohort: { transition: result.transition, basis, records: result.records, unchanged: result.unchanged },
  };
}
