// Reading State Flow's provenance from the selected Pi branch: checkpoint entries
// (`{revision}` / `{disabled:true}`, appended with pi.appendEntry) become restore markers, and the
// branch's shape tells the episode machine whether a session is genuinely new. Pure over entries.

import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import type { BranchMarker } from "../../machines/restore.ts";
import type { BranchShape } from "../../machines/episode.ts";
import { STOP_HANDOFF, type MarkerDetails } from "./context.ts";

/** customType of State Flow's branch checkpoint entries. */
export const CHECKPOINT_ENTRY = "state-flow";
/** customType of the entry recording a discarded draft (`{timestamp}` of its assistant message). */
export const DISCARDED_ENTRY = "state-flow-discarded";

export type CheckpointData = { revision: string } | { disabled: true };

function parseCheckpoint(data: unknown): CheckpointData | "malformed" {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return "malformed";
  const record = data as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1 && record.disabled === true) return { disabled: true };
  if (
    keys.length === 1 &&
    typeof record.revision === "string" &&
    /^([0-9a-f]{40}|[0-9a-f]{64}|file:[0-9a-f]{64})$/.test(record.revision)
  ) {
    return { revision: record.revision };
  }
  return "malformed";
}

/**
 * Markers of the branch, oldest first. A malformed entry is kept as such so the restore falls
 * back past it; a disabled entry records whether this physical session wrote the
 * stop handoff just before it (then it restores the passive projection, otherwise plain off).
 */
export function branchMarkers(entries: readonly SessionEntry[], sessionId: string): BranchMarker[] {
  const markers: BranchMarker[] = [];
  let handoffBy: string | undefined;
  for (const entry of entries) {
    if (entry.type === "custom_message" && entry.customType === STOP_HANDOFF) {
      handoffBy = (entry.details as MarkerDetails | undefined)?.sessionId;
      continue;
    }
    if (entry.type !== "custom" || entry.customType !== CHECKPOINT_ENTRY) continue;
    const data = parseCheckpoint(entry.data);
    if (data === "malformed") markers.push({ kind: "malformed" });
    else if ("revision" in data) markers.push({ kind: "revision", revision: data.revision });
    else markers.push(handoffBy === sessionId ? { kind: "disabled", stoppedBy: sessionId } : { kind: "disabled" });
  }
  return markers;
}

export function branchShape(entries: readonly SessionEntry[]): BranchShape {
  if (entries.some((e) => e.type === "custom" && e.customType === CHECKPOINT_ENTRY)) return "marked";
  return entries.some((e) => e.type === "message") ? "unmarked" : "empty";
}

/** Timestamps of the drafts a resolution discarded on this branch (any session's, a fork's parent's too). */
export function discardedDrafts(entries: readonly SessionEntry[]): Set<number> {
  const discarded = new Set<number>();
  for (const entry of entries) {
    if (entry.type !== "custom" || entry.customType !== DISCARDED_ENTRY) continue;
    const timestamp = (entry.data as { timestamp?: unknown } | undefined)?.timestamp;
    if (typeof timestamp === "number") discarded.add(timestamp);
  }
  return discarded;
}
