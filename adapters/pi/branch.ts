// Reading State Flow's provenance from the selected Pi branch: checkpoint entries
// (`{revision}` / `{disabled:true}`, appended with pi.appendEntry) become restore markers, and the
// branch's shape tells the episode machine whether a session is genuinely new; a selected answer's
// checkpoint, written after it, is read as the branch's (markerEntries). Pure over entries.
//
// Older State Flow versions copied runtime config/meta, counters, lineage, the specification and
// semantic state into these entries (spec 001 "Runtime ownership": "Older config/meta and
// state-bearing checkpoints remain read-only compatibility input"). Such an entry is read for its
// revision pointer only, which then undergoes the same fallback checks as a current one; the
// members it carries are never trusted as state. One without an immutable pointer cannot be
// proven, and when it carries semantic state or an enabled runtime it is not reduced to an
// ordinary disabled marker either ("an unanchored legacy semantic payload cannot be silently
// reduced to an ordinary-disabled marker"): it becomes an `unanchored` marker, which fails closed.

import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import type { BranchMarker } from "../../machines/restore.ts";
import type { BranchShape } from "../../machines/episode-types.ts";
import { STOP_HANDOFF, type MarkerDetails } from "./context.ts";

/** customType of State Flow's branch checkpoint entries. */
export const CHECKPOINT_ENTRY = "state-flow";
/** customType of the entry recording a discarded draft (`{timestamp}` of its assistant message). */
export const DISCARDED_ENTRY = "state-flow-discarded";

export type CheckpointData = { revision: string; boundary?: { id: string; step: number } } | { disabled: true };

/** An older entry form: what it anchors (if anything) and which copied members it carried. */
type LegacyCheckpoint =
  { legacy: "anchored"; revision: string } | { legacy: "disabled" } | { legacy: "unanchored"; members: string[] };

const POINTER = /^([0-9a-f]{40}|[0-9a-f]{64}|file:[0-9a-f]{64})$/;

/** What 001 says older entries copied ("Configuration, counters, specification, lineage, and semantic state"). */
const LEGACY_MEMBERS = new Map<string, (value: unknown) => boolean>([
  ["revision", (value) => typeof value === "string"],
  ["config", (value) => isRecord(value) && (value.enabled === undefined || typeof value.enabled === "boolean")],
  ["meta", isRecord],
  ["state", isRecord],
  ["counters", isRecord],
  ["lineage", isRecord],
  ["specification", (value) => typeof value === "string" || isRecord(value)],
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseCheckpoint(data: unknown): CheckpointData | LegacyCheckpoint | "malformed" {
  if (!isRecord(data)) return "malformed";
  const keys = Object.keys(data);
  if (keys.length === 1 && data.disabled === true) return { disabled: true };
  if (keys.length === 1 && typeof data.revision === "string" && POINTER.test(data.revision)) {
    return { revision: data.revision };
  }
  if (keys.length === 2 && typeof data.revision === "string" && POINTER.test(data.revision)) {
    const boundary = data.boundary as { id?: unknown; step?: unknown } | undefined;
    if (isRecord(boundary) && Object.keys(boundary).length === 2 && typeof boundary.id === "string") {
      const step = boundary.step;
      if (Number.isSafeInteger(step) && (step as number) >= 0) {
        return { revision: data.revision, boundary: { id: boundary.id, step: step as number } };
      }
    }
  }
  return parseLegacy(data, keys);
}

/**
 * An older entry form: only the members older versions wrote, each of its type, and at least one
 * besides the revision (a lone `{revision}` with a bad pointer stays malformed, as before).
 */
function parseLegacy(data: Record<string, unknown>, keys: string[]): LegacyCheckpoint | "malformed" {
  const members = keys.filter((key) => key !== "revision");
  if (members.length === 0 || !keys.every((key) => LEGACY_MEMBERS.get(key)?.(data[key]))) return "malformed";
  if (typeof data.revision === "string" && POINTER.test(data.revision)) {
    return { legacy: "anchored", revision: data.revision };
  }
  // A stop an older version recorded carries no semantic state: it is the older form of {disabled:true}.
  const config = data.config as { enabled?: boolean } | undefined;
  if (config?.enabled === false && data.state === undefined) return { legacy: "disabled" };
  return { legacy: "unanchored", members: members.sort() };
}

/**
 * Markers of the branch, oldest first. A malformed entry is kept as such so the restore falls
 * back past it; a disabled entry records whether this physical session wrote the
 * stop handoff just before it (then it restores the passive projection, otherwise plain off).
 * An older entry form becomes the marker of what it anchors (see the header).
 */
export function branchMarkers(entries: readonly SessionEntry[], sessionId: string, forkedAt?: string): BranchMarker[] {
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
    else if ("legacy" in data && data.legacy === "anchored")
      markers.push({ kind: "revision", revision: data.revision, legacy: true });
    else if ("legacy" in data && data.legacy === "unanchored")
      markers.push({ kind: "unanchored", members: data.members });
    else if ("revision" in data) {
      markers.push({
        kind: "revision",
        revision: data.revision,
        ...(data.boundary ? { boundary: data.boundary } : {}),
        ...(forkedAt !== undefined && entry.timestamp <= forkedAt ? { inherited: true as const } : {}),
      });
    } else markers.push(handoffBy === undefined ? { kind: "disabled" } : { kind: "disabled", stoppedBy: handoffBy });
  }
  return markers;
}

/**
 * The entries to read the selected branch's markers from: the branch, plus the checkpoint that
 * recorded its newest message when that message is an assistant message whose checkpoint lies off
 * the branch. Pi's /tree puts the leaf on a selected assistant message itself, but State Flow
 * records an accepted answer's state at turn_end, after the message, as its child: without this
 * the restore would pick the checkpoint before the answer (the previous run's response), not the
 * state whose response is the answer the user selected.
 *
 * From the leaf up, the newest message is found past non-message entries (a branch summary, a
 * label, a custom entry). Its checkpoint is the first State Flow checkpoint, in the session's
 * entry order, reached from it by following children through non-message entries only: nothing
 * the user or the model said lies between, so it records the state in force right after that
 * message (for a message calling patch_state, the transition it made). A discarded draft reaches
 * none (its resolution note, a custom message, follows it).
 * Pi 1.6's `system` message entries record a tool loadout, not a turn, and are passed like
 * non-message entries. A checkpoint already on the branch after that message means the leaf is
 * past it: the branch is read as it is.
 *
 * The checkpoint carries no session id, and none is needed: `all` is this session file's entries,
 * which are its own or copied into it when Pi forked it (`forkFrom` copies every entry,
 * `createBranchedSession` the path to the fork point). A copied checkpoint is read as the copied
 * checkpoints on the branch already are: the store proves a revision holds a runtime of this
 * physical session (StateStore.loadPointer), so a parent's pointer is an invalid target in a fork.
 * A stop's attribution is unchanged: its handoff is a custom message, so the walk never crosses one.
 */
export function markerEntries(branch: readonly SessionEntry[], all: readonly SessionEntry[]): readonly SessionEntry[] {
  let newest = branch.length - 1;
  while (newest >= 0 && !isTurn(branch[newest]!)) newest--;
  const answer = branch[newest];
  if (answer?.type !== "message" || answer.message.role !== "assistant") return branch;
  if (branch.slice(newest + 1).some(isCheckpoint)) return branch;
  // A child is appended after its parent, so one pass in file order follows every path down.
  const reached = new Set([answer.id]);
  for (const entry of all) {
    if (entry.parentId === null || !reached.has(entry.parentId) || isTurn(entry)) continue;
    if (isCheckpoint(entry)) return [...branch, entry];
    reached.add(entry.id);
  }
  return branch;
}

/** A message or custom message: something the model or the user said (Pi 1.6's tool loadout records aside). */
function isTurn(entry: SessionEntry): boolean {
  if (entry.type === "custom_message") return true;
  return entry.type === "message" && (entry.message as { role: string }).role !== "system";
}

function isCheckpoint(entry: SessionEntry): boolean {
  return entry.type === "custom" && entry.customType === CHECKPOINT_ENTRY;
}

/**
 * The selected branch's markers: its own, and the selected answer's record when that lies off the
 * branch (markerEntries), marked `offBranch` so that the restore records it on the branch.
 */
export function selectedMarkers(
  branch: readonly SessionEntry[],
  all: readonly SessionEntry[],
  sessionId: string,
  forkedAt?: string,
): BranchMarker[] {
  const entries = markerEntries(branch, all);
  const markers = branchMarkers(entries, sessionId, forkedAt);
  const last = markers.at(-1);
  if (entries.length > branch.length && last?.kind === "revision")
    markers[markers.length - 1] = { ...last, offBranch: true };
  return markers;
}

/**
 * The revisions the selected branch recorded (the entries its markers are read from), oldest
 * first, with the time Pi recorded each: the older boundaries /state-flow-history reads back.
 */
export function recordedRevisions(
  branch: readonly SessionEntry[],
  all: readonly SessionEntry[],
): { revision: string; at: string | null }[] {
  return markerEntries(branch, all).flatMap((entry) => {
    if (!isCheckpoint(entry)) return [];
    const data = parseCheckpoint((entry as { data?: unknown }).data);
    const revision = data === "malformed" ? null : "revision" in data ? data.revision : null;
    return revision ? [{ revision, at: typeof entry.timestamp === "string" ? entry.timestamp : null }] : [];
  });
}

/**
 * The selected branch's newest checkpoint entry that recorded `boundaryId` (a fork at it holds that
 * boundary's state); undefined when none did (checkpoints older versions wrote name no boundary).
 */
export function checkpointEntryOf(
  branch: readonly SessionEntry[],
  all: readonly SessionEntry[],
  boundaryId: string,
): SessionEntry | undefined {
  return [...markerEntries(branch, all)].reverse().find((entry) => {
    if (!isCheckpoint(entry)) return false;
    const data = parseCheckpoint((entry as { data?: unknown }).data);
    return data !== "malformed" && "boundary" in data && data.boundary?.id === boundaryId;
  });
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
