// /state-flow-history's text: one line per boundary, newest first — its offset (hot window only),
// short transition id, step, when it was recorded (if known), which scopes changed and their keys
// added (+), changed (~) and removed (-) two levels deep, and whether the response changed — then
// where the history shown ends and why. Each line is the difference to the next older boundary
// read; when that one was not read, the line says so instead of listing nothing.

import { SCOPES, type ScopeSelector } from "../storage/core/scope-state.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { shortId, stateOf, type BoundaryRecord } from "./boundaries.ts";
import { diffValues, twoLevelSummary } from "./state-views.ts";

/** Boundaries per page of `--all`. */
export const PAGE_SIZE = 20;
/** At most this many keys per scope on one line; the rest are counted (/state-flow-diff lists them all). */
const KEYS_PER_SCOPE = 6;

export interface HistoryInput {
  scope: ScopeSelector;
  /** What is listed, e.g. "the hot window (offsets 0–7)". */
  title: string;
  /** The boundaries listed, newest first. */
  records: readonly BoundaryRecord[];
  /** The boundary just older than the last one listed, when it was read (its line differs against it). */
  older: BoundaryRecord | null;
  /** The last line: where the history shown ends and why, or how to see more. */
  end: string;
  /** The oldest line's note when its older boundary was not read (never an empty change list). */
  oldestNote: string;
  /** What the origin line says (default: State Flow started this line of history there; a fork names its parent). */
  originNote?: string;
}

/** `2026-12-03 21:07:25` (UTC) from Pi's ISO timestamp; "" when unknown. */
export function when(at: string | null): string {
  return at ? `${at.slice(0, 10)} ${at.slice(11, 19)}` : "";
}

/** The change summary of `record` against the next older one, per scope (only scopes that changed). */
export function changeSummary(record: BoundaryRecord, older: BoundaryRecord, scope: ScopeSelector): string {
  const scopes = scope === "effective" ? SCOPES : [scope];
  const parts: string[] = [];
  for (const s of scopes) {
    const entries = diffValues(stateOf(older, s) as unknown as JsonObject, stateOf(record, s) as unknown as JsonObject);
    if (entries.length === 0) continue;
    const sum = twoLevelSummary(entries.filter((e) => e.path[0] !== "response"));
    const keys = [
      ...sum.added.map((k) => `+${k}`),
      ...sum.changed.map((k) => `~${k}`),
      ...sum.removed.map((k) => `-${k}`),
    ];
    const more = keys.length > KEYS_PER_SCOPE ? ` (+${keys.length - KEYS_PER_SCOPE} more)` : "";
    const shown = keys.length > 0 ? [`${keys.slice(0, KEYS_PER_SCOPE).join(" ")}${more}`] : [];
    if (entries.some((e) => e.path[0] === "response")) shown.push("response changed");
    parts.push(`${s}: ${shown.join(", ")}`);
  }
  return parts.length === 0 ? "no change in this scope" : parts.join("; ");
}

function line(record: BoundaryRecord, older: BoundaryRecord | null, input: HistoryInput): string {
  const offset = record.offset === null ? "  " : String(record.offset).padStart(2);
  const time = when(record.at);
  const head = `${offset}  ${shortId(record.id).padEnd(10)}  step ${record.step}${time ? `  ${time}` : ""}`;
  if (record.id === record.lineage) {
    return `${head}  origin: ${input.originNote ?? "State Flow started this line of history here"}`;
  }
  if (!older) return `${head}  ${input.oldestNote}`;
  const gap = record.step - older.step > 1 ? ` (since step ${older.step}: steps between were not recorded here)` : "";
  return `${head}  ${changeSummary(record, older, input.scope)}${gap}`;
}

export function renderHistory(input: HistoryInput): string {
  const { records } = input;
  const lines = [
    `State Flow history — ${input.title}, newest first; scope ${input.scope}`,
    "offset  transition  step  when (UTC)  changes against the next older boundary (+ added, ~ changed, - removed)",
  ];
  records.forEach((record, i) => lines.push(line(record, records[i + 1] ?? input.older, input)));
  lines.push(input.end);
  return lines.join("\n");
}
