// The boundaries a person can look at: the hot window (offsets 0–7) from the branch's cached
// view, and, in a Git store, older ones read back from the revisions the selected branch recorded
// (each accepted transition appended a Pi checkpoint naming its revision). A cold read is a read
// like read_state's: StateStore.loadPointer reads a past commit through the store's git runner
// (timeouts, no prompt) without moving the worktree, and nothing is published.

import { errorMessage } from "../storage/core/errors.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { projectArtifacts } from "../storage/core/artifacts.ts";
import {
  SCOPES,
  overlayScopes,
  type ScopeName,
  type ScopeSelector,
  type ScopeState,
} from "../storage/core/scope-state.ts";
import { availableOffsets, headBoundary, readTemporalState, type TemporalView } from "../storage/core/temporal.ts";
import type { StateStore } from "../storage/state-store.ts";

/** A revision the selected branch recorded, oldest first, with when Pi recorded it (if it says). */
export interface RecordedRevision {
  revision: string;
  at: string | null;
}

/** One boundary as read: its identity, its hot offset (null: older than the hot window) and every scope's state. */
export interface BoundaryRecord {
  id: string;
  step: number;
  lineage: string;
  offset: number | null;
  /** When the branch first recorded a revision whose head is this boundary (null: not known). */
  at: string | null;
  states: Record<ScopeName, ScopeState>;
}

/** A short transition (or lineage) id, as the model's notices print it: `t-` and eight hex digits. */
export function shortId(id: string): string {
  return id.slice(0, 10);
}

/** The state of one scope, or of the overlay, as read_state shows it (runtime-owned provenance stripped). */
export function stateOf(record: BoundaryRecord, scope: ScopeSelector): ScopeState {
  const { global, cwd, session } = record.states;
  const state = scope === "effective" ? overlayScopes(global, cwd, session) : record.states[scope];
  return { ...state, artifacts: projectArtifacts(state.artifacts as JsonObject) as ScopeState["artifacts"] };
}

/** The hot window of a view, newest first: offsets 0..n-1, each scope materialized at that boundary. */
export function hotBoundaries(view: TemporalView): BoundaryRecord[] {
  const records: BoundaryRecord[] = [];
  for (let offset = 0; offset < availableOffsets(view.lineage); offset++) {
    const reads = SCOPES.map((scope) => readTemporalState(view, offset, scope));
    const { boundary } = reads[0]!;
    const states = Object.fromEntries(SCOPES.map((s, i) => [s, reads[i]!.state])) as Record<ScopeName, ScopeState>;
    records.push({ ...boundary, offset, at: null, states });
  }
  return records;
}

export interface ColdRead {
  /** Boundaries newest first, one per distinct head the recorded revisions name. */
  records: BoundaryRecord[];
  /** Why the walk stopped before the oldest recorded revision (null: it read them all, or stopped when asked). */
  ended: string | null;
  /** Every recorded revision was read. */
  complete: boolean;
}

/**
 * Reads the branch's recorded revisions newest first, until `enough` says so: each becomes the
 * boundary its view has as head. A revision that repeats its successor's head (a stop or a restart
 * changes config only) dates that boundary earlier. A revision that cannot be read ends the walk,
 * with the reason in the store's words (one recorded while the store was file-only, for instance).
 */
export async function coldBoundaries(
  store: StateStore,
  recorded: readonly RecordedRevision[],
  enough: (records: readonly BoundaryRecord[]) => boolean,
): Promise<ColdRead> {
  const records: BoundaryRecord[] = [];
  // A revision recorded again (a restore that re-recorded it) is dated by its first record.
  const first = new Map<string, string | null>();
  for (const { revision, at } of recorded) if (!first.get(revision)) first.set(revision, at);
  // (records are oldest first, so the first one seen of a revision is its earliest)
  const seen = new Set<string>();
  for (let i = recorded.length - 1; i >= 0; i--) {
    const { revision } = recorded[i]!;
    const at = first.get(revision) ?? null;
    if (seen.has(revision)) continue;
    seen.add(revision);
    if (enough(records)) return { records, ended: null, complete: false };
    let view: TemporalView;
    try {
      view = (await store.loadPointer({ revision })).view;
    } catch (error) {
      const why = revision.startsWith("file:")
        ? "it was recorded while the store was file-only, and file-only stores keep no older revisions"
        : errorMessage(error);
      return { records, ended: `revision ${revision.slice(0, 17)} could not be read: ${why}`, complete: false };
    }
    const head = headBoundary(view.lineage);
    const known = records.find((r) => r.id === head.id);
    if (known) {
      // (the earliest record dates it: ISO times compare as text)
      if (at !== null && (known.at === null || at < known.at)) known.at = at;
      continue;
    }
    records.push({ ...head, offset: null, at, states: { ...view.current } });
  }
  return { records, ended: null, complete: true };
}

/**
 * The hot window joined with what the cold read found: hot records keep their offsets (and take the
 * time a revision recorded them), older cold ones follow, newest first.
 */
export function joinBoundaries(hot: readonly BoundaryRecord[], cold: readonly BoundaryRecord[]): BoundaryRecord[] {
  const byId = new Map(cold.map((r) => [r.id, r]));
  const joined = hot.map((r) => ({ ...r, at: byId.get(r.id)?.at ?? r.at }));
  const oldestHot = hot[hot.length - 1]?.step ?? Number.POSITIVE_INFINITY;
  const ids = new Set(hot.map((r) => r.id));
  return [...joined, ...cold.filter((r) => !ids.has(r.id) && r.step <= oldestHot)];
}
