// The semantic shape every scope shares ({artifacts, contract, working, response}), the rules
// for model-authored scope patches, and the effective overlay global → cwd → session.
// Shapes are valibot schemas so validation and the model-facing JSON Schema have one source.

import * as v from "valibot";
import { assertNoForgedProvenance, checkArtifact } from "./artifacts.ts";
import { StateFlowError, childPath, issuePath } from "./errors.ts";
import {
  applyJsonPatch,
  assertJson,
  isJsonObject,
  overlayJson,
  sortKeysDeep,
  toJson,
  type JsonObject,
  type JsonValue,
} from "./json.ts";

export const SCOPES = ["global", "cwd", "session"] as const;
export type ScopeName = (typeof SCOPES)[number];
export type ScopeSelector = ScopeName | "effective";

const PATCHABLE_FIELDS = ["artifacts", "contract", "working"] as const;

export interface ScopeState {
  artifacts: JsonObject;
  contract: JsonObject;
  working: JsonObject;
  response: string;
}

const JsonObjectSchema = v.custom<JsonObject>(
  (input) => typeof input === "object" && input !== null && !Array.isArray(input),
  "must be an object",
);

const ScopeStateSchema = v.strictObject(
  {
    artifacts: v.custom<JsonObject>(
      (input) => typeof input === "object" && input !== null && !Array.isArray(input),
      "must be an object keyed by exact source path",
    ),
    contract: JsonObjectSchema,
    working: JsonObjectSchema,
    response: v.string("must be a string"),
  },
  (issue) =>
    issue.expected === "never"
      ? "unknown field; a scope holds exactly artifacts, contract, working and response"
      : "is missing; a scope holds exactly artifacts, contract, working and response",
);

export function emptyScopeState(): ScopeState {
  return { artifacts: {}, contract: {}, working: {}, response: "" };
}

function firstIssue(base: string, issues: readonly v.BaseIssue<unknown>[]): StateFlowError {
  const issue = issues[0]!;
  return new StateFlowError("invalid-state", issue.message, issuePath(base, issue) || base);
}

/**
 * Every artifact entry meets the artifact shape. Entries shared (by reference) with `known`, a
 * state that already passed, are skipped, so a patch costs only the entries it touched.
 */
function checkArtifacts(artifacts: JsonObject, path: string, known?: JsonObject): void {
  const base = childPath(path, "artifacts");
  for (const key of Object.keys(artifacts)) {
    const entry = artifacts[key];
    if (known && Object.prototype.hasOwnProperty.call(known, key) && known[key] === entry) continue;
    checkArtifact(entry, childPath(base, key));
  }
}

const MATERIALIZED = { allowNull: "never" } as const;

/**
 * The one rule for materialized scope state, used when a patch is applied and when the codec
 * reads a checkpoint back: plain finite JSON without null (json.ts), exactly the four fields,
 * every artifact entry shaped (artifacts.ts, refused as `invalid-artifact`). Untrusted input is
 * copied; a freshly patched state is only checked, skipping the subtrees it shares with `known`,
 * a state that already passed this rule.
 */
function checkScopeState(value: unknown, path: string, known?: ScopeState): ScopeState {
  let json: JsonValue;
  if (known === undefined) {
    json = toJson(value, path, MATERIALIZED);
  } else {
    json = value as JsonValue;
    assertJson(json, path, MATERIALIZED, known as unknown as JsonObject);
  }
  const result = v.safeParse(ScopeStateSchema, json);
  if (!result.success) throw firstIssue(path, result.issues);
  checkArtifacts((json as JsonObject).artifacts as JsonObject, path, known?.artifacts);
  return json as unknown as ScopeState;
}

/** Validates a materialized scope state and returns a detached copy. `path` prefixes messages, e.g. `session`. */
export function parseScopeState(value: unknown, path: string): ScopeState {
  return checkScopeState(value, path);
}

/** The retired Skill store: Skills are compiled into cwd artifacts keyed by their SKILL.md path now. */
function assertNotRetiredSkillStore(contract: JsonObject, path: string): void {
  if (!Object.prototype.hasOwnProperty.call(contract, "compiled_skills") || contract.compiled_skills === null) return;
  throw new StateFlowError(
    "retired-store",
    "contract.compiled_skills is retired and cannot be recreated: compile each Skill into a cwd artifact at " +
      'its exact SKILL.md path instead, e.g. {"cwd":{"artifacts":{"/path/SKILL.md":{"description":"…",' +
      '"kind":"skill","compilation":{…}}}}}. (Deleting it with null stays allowed.)',
    childPath(path, "compiled_skills"),
  );
}

export interface ScopePatchOptions {
  /** The runtime may set `response`; the model never can. */
  allowResponse: boolean;
  /**
   * Replay of stored records only: patches accepted before provenance moved to meta.json may
   * embed the retired fields, and what was once accepted must stay readable. Model-authored
   * patches never set this, so they cannot forge provenance.
   */
  allowProvenance?: boolean;
}

export type ScopePatch = Partial<Record<"artifacts" | "contract" | "working", JsonObject>> & {
  response?: string;
};

/**
 * Validates one scope's patch and returns a detached copy. `null` may only delete a key of an
 * object in merge position; array contents must already be valid materialized state (json.ts).
 */
export function parseScopePatch(value: unknown, path: string, options: ScopePatchOptions): ScopePatch {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new StateFlowError("invalid-patch", 'a scope patch must be an object such as {"working":{…}}', path);
  }
  const json = toJson(value, path, { allowNull: "merge-members" }) as JsonObject;
  const keys = Object.keys(json);
  if (keys.length === 0) {
    throw new StateFlowError(
      "invalid-patch",
      'empty scope patch; omit scopes you do not change, or send {"final":true} alone when nothing changes',
      path,
    );
  }
  for (const key of keys) {
    const field = childPath(path, key);
    const change = json[key]!;
    if (key === "response") {
      if (!options.allowResponse) {
        throw new StateFlowError(
          "invalid-patch",
          "response is not patchable; the runtime captures your final answer as response",
          field,
        );
      }
      if (typeof change !== "string") throw new StateFlowError("invalid-patch", "response must be a string", field);
      continue;
    }
    if (!(PATCHABLE_FIELDS as readonly string[]).includes(key)) {
      throw new StateFlowError(
        "invalid-patch",
        `unknown field; a scope patch may touch only ${PATCHABLE_FIELDS.join(", ")}`,
        field,
      );
    }
    if (change === null) {
      throw new StateFlowError(
        "invalid-patch",
        "a scope field cannot be deleted; delete its keys with null members instead",
        field,
      );
    }
    if (!isJsonObject(change)) {
      throw new StateFlowError("invalid-patch", "must be an object (it merges into the field)", field);
    }
    if (key === "artifacts" && !options.allowProvenance) assertNoForgedProvenance(change, field);
    if (key === "contract" && !options.allowProvenance) assertNotRetiredSkillStore(change, field);
  }
  return json as ScopePatch;
}

/**
 * Applies a validated scope patch to a valid state and returns the new state, checked by the same
 * rule the codec applies when it reads state back, so an accepted patch can never make a store
 * unreadable.
 */
export function applyScopePatch(state: ScopeState, patch: ScopePatch, path: string): ScopeState {
  const next = applyJsonPatch(state as unknown as JsonObject, patch as unknown as JsonObject);
  return inStoredOrder(checkScopeState(next, path, state));
}

/**
 * The state with each section's keys in the order the store writes them (sorted, codec.ts): a
 * state read back after a resume — from a folded checkpoint, or a record of several keys — then
 * has the same key order as the one the session held, so the model's view (and its prompt cache)
 * does not reorder across a restart.
 */
export function inStoredOrder(state: ScopeState): ScopeState {
  const section = (value: JsonObject) => sortKeysDeep(value) as JsonObject;
  return {
    artifacts: section(state.artifacts as JsonObject),
    contract: section(state.contract),
    working: section(state.working),
    response: state.response,
  } as ScopeState;
}

/**
 * Effective state: recursive overlay global → cwd → session, session wins. A key a scope does
 * not hold (including one it deleted) reveals the lower scope's value. An empty `response`
 * means "no answer captured in this scope" and likewise reveals the lower one.
 */
export function overlayScopes(global: ScopeState, cwd: ScopeState, session: ScopeState): ScopeState {
  const field = (name: "artifacts" | "contract" | "working"): JsonObject =>
    overlayJson(overlayJson(global[name], cwd[name]), session[name]) as JsonObject;
  return {
    artifacts: field("artifacts"),
    contract: field("contract"),
    working: field("working"),
    response: session.response || cwd.response || global.response,
  };
}
