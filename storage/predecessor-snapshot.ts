// Revision-linked predecessor snapshots (spec 001 "Existing stores and migration": "revision-linked
// predecessor snapshots have a one-way restoration path"; "Historical legacy restoration reads only
// the authoritative current snapshots, not explanatory journals"). A Pi branch an older State Flow
// version recorded names a Git revision whose tree holds that version's current-state document,
// the session scope's `state.json`, instead of a checkpoint/tail pair and runtime files.
//
// Reading one takes only that state.json at that revision: any journal or other file beside it is
// never read, and a state.json beside a checkpoint or an orphaned tail is refused by name, as the
// in-store migration refuses them. The restoration is one-way: the snapshot becomes this session's
// checkpoint with an empty tail at a fresh migration boundary (step 0), from which a start builds
// the runtime; nothing is ever written back in the predecessor format. The revision itself stays
// in Git as that history.

import { randomUUID } from "node:crypto";
import { CHECKPOINT_FILE, parseScopeStream, serializeScopeStream } from "./core/codec.ts";
import { hashJson, type JsonObject } from "./core/json.ts";
import type { ScopeState } from "./core/scope-state.ts";
import type { CohortSnapshot, StoreBackend } from "./backend.ts";
import { scopeFiles, type ScopeKeys } from "./layout.ts";
import { LEGACY_STATE_FILE, parseLegacyState } from "./legacy-migration.ts";
import { StoreError } from "./store-error.ts";

export interface PredecessorSnapshot {
  /** The Git revision the branch recorded. */
  readonly revision: string;
  /** Store-relative path of the session's state.json at that revision. */
  readonly path: string;
  readonly state: ScopeState;
  /** Semantic hash the restored checkpoint reproduces. */
  readonly hash: string;
}

/** The session scope's files a restoration reads and writes, beside its legacy state.json. */
function sessionPaths(keys: ScopeKeys) {
  const files = scopeFiles("session", keys);
  return { ...files, config: files.config!, state: `${files.dir}/${LEGACY_STATE_FILE}` };
}

const GIT_REVISION = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The session's predecessor snapshot at `revision`; null when that revision holds none for this
 * session (then it is not a predecessor's revision of it) or holds this session's runtime files.
 */
export async function readPredecessorSnapshot(
  store: StoreBackend,
  keys: ScopeKeys,
  revision: string,
): Promise<PredecessorSnapshot | null> {
  if (store.kind !== "git" || !GIT_REVISION.test(revision)) return null;
  const p = sessionPaths(keys);
  const at = await store.loadRevision({ revision }, [p.state, p.checkpoint, p.patches, p.meta, p.config]);
  const bytes = at.files.get(p.state) ?? null;
  if (bytes === null || at.files.get(p.meta) || at.files.get(p.config)) return null;
  const short = revision.slice(0, 12);
  if (at.files.get(p.checkpoint)) {
    throw new StoreError(
      "ambiguous-snapshot",
      `Revision ${short} holds both ${p.state} and ${p.checkpoint} for this session: two snapshots, and nothing ` +
        "proves which one the branch recorded. Nothing was restored; select another checkpoint with /tree.",
      { file: p.state },
    );
  }
  if (at.files.get(p.patches)) {
    throw new StoreError(
      "orphaned-tail",
      `Revision ${short} holds ${p.state} beside ${p.patches} with no ${CHECKPOINT_FILE}: those records have no ` +
        "base they provably follow. Nothing was restored; select another checkpoint with /tree.",
      { file: p.patches },
    );
  }
  const state = parseLegacyState(`${p.state} at revision ${short}`, bytes);
  return { revision, path: p.state, state, hash: hashJson(state as unknown as JsonObject) };
}

/** Whether the live session files are exactly the snapshot's base: its checkpoint, an empty tail, nothing else. */
function holdsBase(live: CohortSnapshot, keys: ScopeKeys, snapshot: PredecessorSnapshot): boolean {
  const p = sessionPaths(keys);
  const file = (path: string) => live.files.get(path) ?? null;
  if (file(p.meta) || file(p.config) || file(p.state) || file(p.checkpoint) === null) return false;
  try {
    const stream = parseScopeStream("session", { checkpoint: file(p.checkpoint), patches: file(p.patches) });
    return stream.tail.length === 0 && stream.checkpoint.hash === snapshot.hash;
  } catch {
    return false; // not that base: it is written again
  }
}

/**
 * Makes the snapshot the live session base: its state as the session checkpoint at a fresh
 * migration boundary with an empty tail, and no runtime files, which a start then builds on (a
 * session checkpoint without meta is such a base). One compare-and-swap publication; a later
 * branch's live session files it replaces stay recoverable from their Git revision. Returns
 * whether it published (false: the live files already are that base, e.g. the in-store migration
 * of an unchanged state.json just wrote it).
 */
export async function placeSessionBase(
  store: StoreBackend,
  keys: ScopeKeys,
  snapshot: PredecessorSnapshot,
): Promise<boolean> {
  const p = sessionPaths(keys);
  const live = await store.loadCurrent([p.checkpoint, p.patches, p.meta, p.config, p.state]);
  if (holdsBase(live, keys, snapshot)) return false;
  const origin = `m-${randomUUID()}`;
  const stream = serializeScopeStream({
    scope: "session",
    checkpoint: { through: { lineage: origin, id: origin, step: 0 }, state: snapshot.state, hash: snapshot.hash },
    tail: [],
  });
  const writes = new Map<string, Buffer | null>([
    [p.checkpoint, Buffer.from(stream.checkpoint, "utf8")],
    [p.patches, Buffer.from(stream.patches, "utf8")],
    [p.meta, null],
    [p.config, null],
    [p.state, null],
  ]);
  await store.publish({
    basis: live,
    writes,
    message: `state-flow: restore the predecessor session snapshot of ${snapshot.revision.slice(0, 12)}`,
  });
  return true;
}
