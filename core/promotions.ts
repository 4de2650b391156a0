// External memory promotions (spec 001, "Optional memory curation"): the generic global
// `working.memory_promotions` map, keyed by promotion id. Each entry needs a `status` (pending,
// accepted, failed or unknown) and a non-empty `owner`; an accepted entry also needs the exact
// destination `pointer` and its `revision`. Other fields are destination-specific and kept. An
// accepted record without that evidence must never read as accepted: it could justify deleting the
// only copy of a memory.

import { StateFlowError } from "./errors.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "./json.ts";

export const PROMOTION_STATUSES = ["pending", "accepted", "failed", "unknown"] as const;
export type PromotionStatus = (typeof PROMOTION_STATUSES)[number];

export interface PromotionRecord {
  readonly id: string;
  readonly status: PromotionStatus;
  readonly owner: string;
  readonly pointer?: string;
  readonly revision?: string;
  readonly error?: string;
}

export interface Promotions {
  readonly valid: readonly PromotionRecord[];
  readonly invalid: readonly { readonly id: string; readonly problem: string }[];
}

const nonEmpty = (value: JsonValue | undefined): value is string => typeof value === "string" && value.trim() !== "";

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
