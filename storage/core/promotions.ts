// External memory promotions (spec 001, "Optional memory curation"): the generic global
// `working.memory_promotions` map, keyed by promotion id. Each entry needs a `status` (pending,
// accepted, failed or unknown) and a non-empty `owner`; an accepted entry also needs the exact
// destination `pointer` and its `revision`. Other fields are destination-specific and kept. An
// accepted record without that evidence must never read as accepted: it could justify deleting the
// only copy of a memory.
//
// A record may name the State Flow body it promotes with `body`, a JSON Pointer into the scopes
// (`/cwd/working/release_plan`). That body may only be deleted once its record proves the
// destination holds it: accepted, with pointer and revision, and `content` evidence of what the
// destination holds (a hash or an excerpt). Until then the body is the only accepted copy.

import { StateFlowError } from "./errors.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "./json.ts";
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

function hasContentEvidence(entry: JsonObject): boolean {
  const content = entry.content;
  return nonEmpty(content) || (isJsonObject(content) && Object.keys(content).length > 0);
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

/**
 * Refuses a cohort that deletes a body some promotion names (before or after the cohort) unless
 * that promotion, as the cohort leaves it, is accepted with destination pointer, revision and
 * content evidence (`promotion-unproven`). `before` and `after` are every scope's state.
 */
export function assertPromotedBodiesKept(
  before: Readonly<Record<ScopeName, ScopeState>>,
  after: Readonly<Record<ScopeName, ScopeState>>,
): void {
  const records = { ...promotionsOf(before), ...promotionsOf(after) };
  const afterRecords = promotionsOf(after);
  for (const id of Object.keys(records).sort()) {
    const named = records[id];
    const body = isJsonObject(named) ? named.body : undefined;
    const target = parseBodyPointer(body);
    if (!target) continue;
    if (valueAt(before[target.scope], target.path) === undefined) continue;
    if (valueAt(after[target.scope], target.path) !== undefined) continue;
    const record = afterRecords[id];
    const proven =
      isJsonObject(record) &&
      record.status === "accepted" &&
      promotionProblem(record) === null &&
      hasContentEvidence(record);
    if (proven) continue;
    const why = !isJsonObject(record)
      ? "this patch also deletes its record"
      : record.status !== "accepted"
        ? `its record is ${String(record.status)}, not accepted`
        : "its accepted record has no destination pointer, revision and content evidence";
    throw new StateFlowError(
      "promotion-unproven",
      `This patch deletes ${String(body)}, the only accepted copy of the body promotion ${id} promotes, but ${why}. ` +
        "Nothing was written. Keep the body until the destination is verified; then record " +
        `global.working.memory_promotions.${id} as {"status":"accepted","owner":"…","pointer":"<exact destination>",` +
        `"revision":"<its revision>","content":"<hash or excerpt of what the destination holds>","body":` +
        `${JSON.stringify(body)}} and delete the body (the compact record stays).`,
      `global.working.memory_promotions.${id}`,
    );
  }
}
