// A loaded cohort decoded into a branch state: the session's runtime meta and config, the three
// scope streams, each pair proved against the record its meta keeps (stream-record.ts), and the
// temporal view over them. Shared global/cwd streams that left the branch's lineage are adopted at
// a fresh proven origin (spec 001 "Runtime ownership": adoption fabricates no parent ancestry).

import { randomUUID } from "node:crypto";
import {
  parseRuntimeMeta,
  parseScopeStream,
  parseSessionConfig,
  type RuntimeMeta,
  type SessionConfig,
} from "./core/codec.ts";
import { StateFlowError } from "./core/errors.ts";
import { SCOPES, type ScopeName } from "./core/scope-state.ts";
import {
  assertLineage,
  assertStreamInLineage,
  createView,
  headBoundary,
  originateView,
  type Lineage,
  type ScopeStream,
  type TemporalView,
} from "./core/temporal.ts";
import type { CohortSnapshot, StorePointer } from "./backend.ts";
import { assertIdentityOwns, cwdIdentity, scopeFiles, sessionIdentity } from "./layout.ts";
import { readSharedMeta } from "./shared-meta.ts";
import { StoreError } from "./store-error.ts";
import { assertStreamRecord, type StoreKind } from "./stream-record.ts";

export interface SessionIdentity {
  cwd: string;
  cwdKey: string;
  sessionId: string;
  sessionKey: string;
}

export interface BranchState {
  identity: SessionIdentity;
  /** The durable cohort this runtime is (`{revision}` Pi checkpoint data). */
  pointer: StorePointer;
  view: TemporalView;
  meta: RuntimeMeta;
  config: SessionConfig;
  /** Exact bytes' hashes the runtime was read from: the compare-and-swap basis of its next publication. */
  basis: CohortSnapshot;
}

/** One member's bytes in a snapshot (null: absent). */
export function file(snapshot: CohortSnapshot, path: string): Buffer | null {
  return snapshot.files.get(path) ?? null;
}

/** The scope's pair of a snapshot, proved against the record `meta` keeps of it (none: files of an earlier version). */
export function provedPair(
  snapshot: CohortSnapshot,
  id: SessionIdentity,
  scope: ScopeName,
  store: StoreKind,
  meta?: RuntimeMeta,
) {
  const p = scopeFiles(scope, id);
  const bytes = { checkpoint: file(snapshot, p.checkpoint), patches: file(snapshot, p.patches) };
  const record =
    scope === "session" ? meta?.stream : readSharedMeta(file(snapshot, p.meta), scope, p.meta, store.root)?.stream;
  assertStreamRecord(p, record, bytes, store);
  return bytes;
}

/**
 * The three scope streams of a snapshot. The shared scopes' pairs are proved against the record
 * their meta.json keeps; the session pair against `sessionMeta`'s when given (the session layer of
 * a start or an adoption is not read from these files, so it is parsed but not proved there).
 */
export function readStreams(
  snapshot: CohortSnapshot,
  id: SessionIdentity,
  store: StoreKind,
  sessionMeta?: RuntimeMeta,
): Record<ScopeName, ScopeStream> {
  const streams = {} as Record<ScopeName, ScopeStream>;
  for (const scope of SCOPES) {
    const bytes = provedPair(snapshot, id, scope, store, sessionMeta);
    streams[scope] = parseScopeStream(scope, bytes, scopeFiles(scope, id).dir || ".");
  }
  return streams;
}

/** Rejects a cwd key owned by another canonical cwd (two directories mapping to one key). */
export function checkCwdOwner(snapshot: CohortSnapshot, id: SessionIdentity, root?: string): void {
  const path = scopeFiles("cwd", id).meta;
  const bytes = file(snapshot, path);
  const stored = readSharedMeta(bytes, "cwd", path, root)?.identity;
  assertIdentityOwns({
    file: path,
    stored: stored ? cwdIdentity(stored.cwd) : undefined,
    claimed: cwdIdentity(id.cwd),
  });
}

export function checkSessionOwner(meta: RuntimeMeta, id: SessionIdentity, path: string): void {
  assertIdentityOwns({
    file: path,
    stored: sessionIdentity(meta.identity.sessionId, meta.identity.cwd),
    claimed: sessionIdentity(id.sessionId, id.cwd),
  });
}

/**
 * Decodes a loaded cohort into a runtime; null when this session has no runtime files there.
 * `liveShared`: the snapshot's global/cwd files are the live ones rather than the ones published
 * with this runtime (a `file:` pointer proves only the session files), so shared streams another
 * session advanced are adopted as a publication would adopt them.
 */
export function decodeBranchState(
  snapshot: CohortSnapshot,
  id: SessionIdentity,
  options: { liveShared?: boolean; store?: StoreKind } = {},
): BranchState | null {
  checkCwdOwner(snapshot, id, options.store?.root);
  const metaPath = scopeFiles("session", id).meta;
  const metaBytes = file(snapshot, metaPath);
  const configBytes = file(snapshot, scopeFiles("session", id).config!);
  if (!metaBytes && !configBytes) return null;
  if (!metaBytes || !configBytes) {
    const missing = metaBytes ? scopeFiles("session", id).config! : metaPath;
    throw new StoreError(
      "partial-pair",
      `${missing} is missing while its runtime partner exists; ` +
        `restore it (e.g. from Git) or select an earlier checkpoint.`,
      { file: missing },
    );
  }
  const meta = parseRuntimeMeta(metaBytes, metaPath);
  checkSessionOwner(meta, id, metaPath);
  const config = parseSessionConfig(configBytes, scopeFiles("session", id).config!);
  const streams = readStreams(snapshot, id, options.store ?? { root: "<state store>", git: false }, meta);
  const view = options.liveShared ? viewOverShared(meta.lineage, streams) : createView(meta.lineage, streams);
  if (!snapshot.pointer) throw new StoreError("invalid-pointer", "a loaded cohort has no pointer");
  return { identity: id, pointer: snapshot.pointer, view, meta, config, basis: snapshot };
}

export function newLineageId(): string {
  return `l-${randomUUID()}`;
}

/**
 * Adopts live shared streams that advanced outside this lineage at a fresh proven origin,
 * keeping the branch's own session layer. Offsets before the new origin become unavailable.
 */
export function adoptShared(runtime: BranchState, live: CohortSnapshot, store: StoreKind): TemporalView {
  const liveStreams = readStreams(live, runtime.identity, store);
  return viewOverShared(runtime.view.lineage, {
    ...runtime.view.streams,
    global: liveStreams.global,
    cwd: liveStreams.cwd,
  });
}

/**
 * The view of a session layer over shared streams that may have left its lineage: kept in the
 * lineage when they still fit, otherwise adopted at a fresh origin. The session stream must fit
 * the lineage itself: origination would otherwise hide a broken session layer.
 */
function viewOverShared(lineage: Lineage, streams: Record<ScopeName, ScopeStream>): TemporalView {
  assertLineage(lineage);
  assertStreamInLineage(streams.session, lineage);
  try {
    for (const scope of ["global", "cwd"] as const) assertStreamInLineage(streams[scope], lineage);
  } catch (error) {
    if (!(error instanceof StateFlowError) || error.code !== "invalid-lineage") throw error;
    return originateView(newLineageId(), streams, headBoundary(lineage).step);
  }
  return createView(lineage, streams);
}
