// External memory promotions (spec 001, "Optional memory curation"): the generic global
// `working.memory_promotions` map, keyed by promotion id. Each entry needs a `status` (pending,
// accepted, failed or unknown) and a non-empty `owner`; an accepted entry also needs the exact
// destination `pointer` and its `revision`. Other fields are destination-specific and kept. An
// accepted record without that evidence must never read as accepted: it could justify deleting the
// only copy of a memory.
//
// A promotion may remove a State Flow body (delete it, or replace it by a compact pointer) only
// when a record proves the destination holds an identical copy: accepted, with the destination's
// identity (owner, pointer), its revision, and `content` equal to the body's canonical hash. That
// holds whatever a record names: a cohort that writes a record is a promotion for every body it
// removes, and a body a record names (`body`, a JSON Pointer such as `/cwd/working/release_plan`)
// or hashes (`content`) is promoted in every later cohort too. Until then the body may be the only
// accepted copy. A deletion in a cohort that writes no record and touches no promoted body is
// ordinary memory upkeep, which State Flow cannot tell from a promotion and does not refuse.

import { StateFlowError } from "./errors.ts";
import { canonicalJson, hashJson, isJsonObject, type JsonObject, type JsonValue } from "./json.ts";
import { SCOPES, type ScopeName, type ScopeState } from "./scope-state.ts";

export const PROMOTION_STATUSES = ["pending", "accepted", "failed", "unknown"] as const;
export type PromotionStatus = (typeof PROMOTION_STATUSES)[number];

export interface PromotionRecord {
  readonly id: string;
  readonly status: PromotionStatus;
  readonly owner: string;
  readonly pointer?: string;
  readonly revision?: string;
  readonly error?: string;
  readonly body?: string;
}

export interface Promotions {
  readonly valid: readonly PromotionRecord[];
  readonly invalid: readonly { readonly id: string; readonly problem: string }[];
}

const nonEmpty = (value: JsonValue | undefined): value is string => typeof value === "string" && value.trim() !== "";

const STATE_FIELDS = ["artifacts", "contract", "working"];

/** A body pointer's scope and key path (RFC 6901 unescaped), or null when it names no state location. */
export function parseBodyPointer(text: JsonValue | undefined): { scope: ScopeName; path: string[] } | null {
  if (typeof text !== "string" || !text.startsWith("/")) return null;
  const [scope, ...path] = text
    .slice(1)
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (!(SCOPES as readonly string[]).includes(scope!) || path.length < 2 || !STATE_FIELDS.includes(path[0]!)) {
    return null;
  }
  return { scope: scope as ScopeName, path };
}

/** Why an entry is not a promotion record, or null when it is one. */
export function promotionProblem(entry: JsonValue | undefined): string | null {
  if (!isJsonObject(entry)) return "must be an object {status, owner, …}";
  if (!PROMOTION_STATUSES.includes(entry.status as PromotionStatus)) {
    return `status must be one of ${PROMOTION_STATUSES.join(", ")}`;
  }
  if (!nonEmpty(entry.owner)) return "owner must be a non-empty string (who holds the promoted copy)";
  if (entry.status === "accepted" && !(nonEmpty(entry.pointer) && nonEmpty(entry.revision))) {
    return "an accepted promotion needs the exact destination pointer and revision (non-empty strings)";
  }
  if (entry.body !== undefined && parseBodyPointer(entry.body) === null) {
    return (
      "body must be a JSON Pointer to the promoted State Flow body, /<global|cwd|session>/<artifacts|contract|" +
      'working>/<key>…, e.g. "/cwd/working/release_plan"'
    );
  }
  return null;
}

/** Every record of a `memory_promotions` value, sorted by id; anything that is not one is invalid. */
export function readPromotions(value: JsonValue | undefined): Promotions {
  if (value === undefined) return { valid: [], invalid: [] };
  if (!isJsonObject(value))
    return { valid: [], invalid: [{ id: "(the map)", problem: "must be an object keyed by id" }] };
  const valid: PromotionRecord[] = [];
  const invalid: { id: string; problem: string }[] = [];
  for (const id of Object.keys(value).sort()) {
    const entry = value[id];
    const problem = promotionProblem(entry);
    if (problem) {
      invalid.push({ id, problem });
      continue;
    }
    const record = entry as JsonObject;
    valid.push({
      id,
      status: record.status as PromotionStatus,
      owner: record.owner as string,
      ...(nonEmpty(record.pointer) ? { pointer: record.pointer } : {}),
      ...(nonEmpty(record.revision) ? { revision: record.revision } : {}),
      ...(nonEmpty(record.error) ? { error: record.error } : {}),
      ...(nonEmpty(record.body) ? { body: record.body } : {}),
    });
  }
  return { valid, invalid };
}

/**
 * Refuses a global patch that leaves a promotion it touches malformed (`invalid-promotion`).
 * `before` is the current global `working.memory_promotions`, `after` the patched one.
 */
export function assertPromotions(touched: Iterable<string>, after: JsonValue | undefined): void {
  if (after !== undefined && !isJsonObject(after)) {
    throw new StateFlowError(
      "invalid-promotion",
      'must be an object keyed by promotion id, e.g. {"p1":{"status":"pending","owner":"notes-app"}}',
      "global.working.memory_promotions",
    );
  }
  for (const id of touched) {
    const entry = (after as JsonObject | undefined)?.[id];
    if (entry === undefined) continue; // deleted
    const problem = promotionProblem(entry);
    if (problem) {
      throw new StateFlowError(
        "invalid-promotion",
        `${problem}; nothing was written. Send the complete record, e.g. ` +
          '{"status":"accepted","owner":"notes-app","pointer":"notes://memo/42","revision":"r7"}',
        `global.working.memory_promotions.${id}`,
      );
    }
  }
}

function valueAt(state: ScopeState, path: readonly string[]): JsonValue | undefined {
  let value: JsonValue | undefined = state as unknown as JsonObject;
  for (const key of path) {
    if (!isJsonObject(value) || !Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

function promotionsOf(states: Readonly<Record<ScopeName, ScopeState>>): JsonObject {
  const value = states.global.working.memory_promotions;
  return isJsonObject(value) ? value : {};
}

/** The JSON Pointer of a scope location (RFC 6901 escaped), as a record's `body` names it. */
export function bodyPointer(scope: ScopeName, path: readonly string[]): string {
  return `/${[scope, ...path].map((part) => part.replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`;
}

/**
 * What a record's `content` must be to prove the destination holds an identical copy of `body`:
 * `sha256:<hex>` of the body's canonical JSON (keys sorted, no whitespace; storage/core/json.ts).
 */
export function bodyContentHash(body: JsonValue): string {
  return hashJson(body);
}

/** A value the cohort loses: deleted, or replaced by a different one (objects are compared key by key). */
interface Removal {
  readonly scope: ScopeName;
  readonly path: readonly string[];
}

const isPromotionsMap = (scope: ScopeName, path: readonly string[]) =>
  scope === "global" && path[0] === "working" && path[1] === "memory_promotions";

function collectRemovals(
  scope: ScopeName,
  path: string[],
  before: JsonValue,
  after: JsonValue | undefined,
  out: Removal[],
): void {
  if (isPromotionsMap(scope, path)) return;
  if (isJsonObject(before) && isJsonObject(after)) {
    for (const key of Object.keys(before)) {
      const next = Object.prototype.hasOwnProperty.call(after, key) ? after[key] : undefined;
      collectRemovals(scope, [...path, key], before[key]!, next, out);
    }
    return;
  }
  if (after === undefined || canonicalJson(before) !== canonicalJson(after)) out.push({ scope, path });
}

/** Every body value the cohort deletes or replaces, in artifacts, contract and working of every scope. */
function removalsOf(
  before: Readonly<Record<ScopeName, ScopeState>>,
  after: Readonly<Record<ScopeName, ScopeState>>,
): Removal[] {
  const out: Removal[] = [];
  for (const scope of SCOPES) {
    for (const field of STATE_FIELDS) {
      const was = (before[scope] as unknown as JsonObject)[field];
      const now = (after[scope] as unknown as JsonObject)[field];
      if (isJsonObject(was)) collectRemovals(scope, [field], was, isJsonObject(now) ? now : {}, out);
    }
  }
  return out;
}

const isPrefix = (prefix: readonly string[], path: readonly string[]) =>
  prefix.length <= path.length && prefix.every((part, i) => part === path[i]);

/** A record is proof when, as the cohort leaves it, it is accepted, complete, and its content is one of `hashes`. */
function proves(record: JsonValue | undefined, hashes: ReadonlySet<string>): boolean {
  return (
    isJsonObject(record) &&
    record.status === "accepted" &&
    promotionProblem(record) === null &&
    typeof record.content === "string" &&
    hashes.has(record.content)
  );
}

/**
 * Refuses a cohort in which a promotion removes a body that no record proves is held elsewhere
 * (`promotion-unproven`). A removal (a deleted or replaced value in any scope's artifacts, contract
 * or working) is a promotion's when the cohort also writes a `memory_promotions` record, when a
 * record (before or after) names the body with `body`, or when a record's `content` is the body's
 * hash. Such a removal needs a record that, as the cohort leaves it, is accepted with owner,
 * pointer and revision (the destination's identity) and `content` equal to `bodyContentHash` of
 * the removed value or of a body containing it (an identical copy). What a record names does not
 * widen that proof: a record for one body proves nothing about another.
 */
export function assertPromotedBodiesKept(
  before: Readonly<Record<ScopeName, ScopeState>>,
  after: Readonly<Record<ScopeName, ScopeState>>,
): void {
  const was = promotionsOf(before);
  const now = promotionsOf(after);
  const ids = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  if (ids.length === 0) return;
  const touched = ids.filter((id) => was[id] === undefined || now[id] === undefined || !sameJson(was[id]!, now[id]!));
  const named = ids.flatMap((id) => {
    const target = parseBodyPointer(
      [now[id], was[id]].map((r) => (isJsonObject(r) ? r.body : undefined)).find((b) => b !== undefined),
    );
    return target ? [{ id, ...target }] : [];
  });
  for (const removal of removalsOf(before, after)) {
    const state = before[removal.scope];
    // The removed value and every body containing it, down to the top-level entry (field/key).
    const hashes = new Map<string, string[]>();
    for (let depth = removal.path.length; depth >= 2; depth--) {
      const path = removal.path.slice(0, depth);
      hashes.set(bodyContentHash(valueAt(state, path)!), path);
    }
    const naming = named.find(
      (n) => n.scope === removal.scope && (isPrefix(n.path, removal.path) || isPrefix(removal.path, n.path)),
    );
    const hashing = ids.find((id) =>
      [now[id], was[id]].some((r) => isJsonObject(r) && typeof r.content === "string" && hashes.has(r.content)),
    );
    if (touched.length === 0 && !naming && hashing === undefined) continue;
    if (ids.some((id) => proves(now[id], new Set(hashes.keys())))) continue;
    throw unproven(removal, state, { touched, naming, hashing, now });
  }
}

function sameJson(a: JsonValue, b: JsonValue): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function unproven(
  removal: Removal,
  state: ScopeState,
  found: {
    touched: readonly string[];
    naming: { id: string; scope: ScopeName; path: string[] } | undefined;
    hashing: string | undefined;
    now: JsonObject;
  },
): StateFlowError {
  const { naming, hashing, touched, now } = found;
  // The body to prove: the one a record names when it contains the removal, else the top-level entry.
  const unit = naming && isPrefix(naming.path, removal.path) ? naming.path : removal.path.slice(0, 2);
  const id = naming?.id ?? hashing ?? touched[0]!;
  const record = now[id];
  const removed = bodyPointer(removal.scope, removal.path);
  const body = bodyPointer(removal.scope, unit);
  const hash = bodyContentHash(valueAt(state, unit)!);
  const why =
    naming || hashing !== undefined
      ? !isJsonObject(record)
        ? `promotion ${id} promotes it, but this patch also deletes that record`
        : record.status !== "accepted"
          ? `promotion ${id} promotes it, but that record is ${String(record.status)}, not accepted`
          : `promotion ${id} promotes it, but that record's content is not ${hash}, the hash of ${body} as it stands`
      : `this patch also writes promotion record(s) ${touched.join(", ")}, and no accepted record's content is ` +
        `${hash}, the hash of ${body} as it stands`;
  return new StateFlowError(
    "promotion-unproven",
    `This patch removes ${removed}, which may be the only copy: ${why}. Nothing was written. A promotion removes ` +
      "a body only when an accepted record proves an identical copy is held elsewhere: once the destination holds " +
      `exactly ${body}, record global.working.memory_promotions.${id} as {"status":"accepted","owner":"…",` +
      `"pointer":"<exact destination>","revision":"<its revision>","content":"${hash}","body":"${body}"} ` +
      "and remove the body (the compact record stays). Until then keep the body; change promotion records in a " +
      "patch_state of their own and other memory in another.",
    `global.working.memory_promotions.${id}`,
  );
}

/** Who holds memory, as the promotion records say (spec 001: status reports owner mode and fallback activation). */
export interface MemoryOwnership {
  /**
   * "state-flow": State Flow holds every body (no accepted promotion); "shared": State Flow still
   * owns the memory, and the accepted promotions' owners hold copies it may have replaced by pointers.
   */
  readonly mode: "state-flow" | "shared";
  /** The owners of accepted promotions, sorted. */
  readonly externalOwners: readonly string[];
  /**
   * Promotions that failed or whose outcome is unknown: State Flow's own body is the copy in use.
   * `kept` says whether the body the record names is still in state (null: the record names none).
   */
  readonly fallbacks: readonly { readonly record: PromotionRecord; readonly kept: boolean | null }[];
}

export function memoryOwnership(
  promotions: Promotions,
  states: Readonly<Record<ScopeName, ScopeState>>,
): MemoryOwnership {
  const accepted = promotions.valid.filter((p) => p.status === "accepted");
  const externalOwners = [...new Set(accepted.map((p) => p.owner))].sort();
  const fallbacks = promotions.valid
    .filter((p) => p.status === "failed" || p.status === "unknown")
    .map((record) => {
      const target = parseBodyPointer(record.body);
      return { record, kept: target ? valueAt(states[target.scope], target.path) !== undefined : null };
    });
  return { mode: accepted.length > 0 ? "shared" : "state-flow", externalOwners, fallbacks };
}
