// The runtime-owned meta.json of the shared global and cwd scopes (spec 001 "Runtime ownership"):
// the cwd's canonical identity, artifact provenance (storage/core/provenance.ts) and the record of the
// scope's checkpoint/patches pair (stream-record.ts). Read whenever a pair is read; written with
// every write of the pair, so the record always describes the pair beside it.

import { join } from "node:path";
import { parseScopeMeta, serializeScopeMeta, type ScopeMeta, type StreamRecord } from "./core/codec.ts";
import { errorMessage } from "./core/errors.ts";
import {
  decodeProvenance,
  encodeProvenanceArtifacts,
  pruneProvenance,
  recordProvenance,
  type ProvenanceRecord,
} from "./core/provenance.ts";
import type { ScopeName } from "./core/scope-state.ts";
import type { ScopeStream } from "./core/temporal.ts";
import { scopeFiles, type ScopeKeys } from "./layout.ts";
import { StoreError } from "./store-error.ts";
import { recordStream } from "./stream-record.ts";

export type SharedScope = "global" | "cwd";
export type ProvenanceRecords = Readonly<Record<string, ProvenanceRecord>>;

/**
 * A shared scope's meta.json, null when absent. One that cannot be read, or that belongs to the
 * other shared scope (a swapped file), is a named refusal: it is what proves the scope's pair.
 */
export function readSharedMeta(
  bytes: Uint8Array | null,
  scope: SharedScope,
  path: string,
  root?: string,
): ScopeMeta | null {
  if (bytes === null) return null;
  const full = root === undefined ? path : join(root, path);
  let meta: ScopeMeta;
  try {
    meta = parseScopeMeta(bytes, path);
  } catch (error) {
    throw new StoreError(
      "invalid-scope-meta",
      `${full} cannot be read: ${errorMessage(error)}. ${remedy(scope, path, root)}`,
      {
        file: path,
        cause: error,
      },
    );
  }
  if (meta.kind !== scope) {
    throw new StoreError(
      "invalid-scope-meta",
      `${full} is the ${meta.kind} scope's meta.json, not the ${scope} scope's: it was copied or swapped. ` +
        remedy(scope, path, root),
      { file: path },
    );
  }
  return meta;
}

/** What the runtime observed for the shared scopes' provenance in one publication. */
export interface SharedMetaOptions {
  /** Freshness evidence recorded in that scope's meta.json, in the same cohort as the patch that compiled it. */
  readonly provenance?: Partial<Record<SharedScope, ProvenanceRecords>>;
  /** Source paths whose provenance that scope drops in the same cohort (their artifacts were removed). */
  readonly prune?: Partial<Record<SharedScope, readonly string[]>>;
}

/** What to do about a shared meta.json that cannot serve as its scope's proof. */
function remedy(scope: SharedScope, path: string, root: string | undefined): string {
  const full = root === undefined ? path : join(root, path);
  const fromGit =
    root === undefined
      ? ""
      : `; in a Git store git -C ${root} log --oneline -- ${path} names the commits that wrote it and ` +
        `git -C ${root} checkout <commit> -- ${path} puts it back`;
  return (
    `Put back the bytes State Flow wrote (from a backup or your sync client's history${fromGit}), or delete ` +
    `${full}: the ${scope} scope's files are then read without proof, its artifact freshness evidence is gone ` +
    `(those sources are compiled again when next read), and State Flow writes the file again on its next write.`
  );
}

export interface SharedMetaChange {
  /** The record of the pair written beside it (kept as it is when omitted). */
  readonly stream?: StreamRecord;
  /** Freshness evidence to record. */
  readonly provenance?: ProvenanceRecords;
  /** Source paths whose provenance is dropped. */
  readonly prune?: readonly string[];
}

/**
 * A shared scope's meta.json bytes with `change` applied; the rest of the file kept as it is.
 * `stored` is `bytes` as readSharedMeta read them (the caller has already read them once).
 */
export function sharedMetaWith(
  bytes: Uint8Array | null,
  stored: ScopeMeta | null,
  scope: SharedScope,
  cwd: { readonly cwd: string; readonly cwdKey: string },
  change: SharedMetaChange,
): string {
  const identity = scope === "cwd" ? { identity: { cwd: cwd.cwd, cwdKey: cwd.cwdKey } } : {};
  const meta: ScopeMeta = stored ?? { version: 1, kind: scope, ...identity, artifacts: {} };
  let artifacts = meta.artifacts;
  if (change.provenance || change.prune) {
    let section = decodeProvenance(bytes);
    for (const [source, record] of Object.entries(change.provenance ?? {})) {
      section = recordProvenance(section, source, record);
    }
    if (change.prune && change.prune.length > 0) section = pruneProvenance(section, change.prune);
    artifacts = encodeProvenanceArtifacts(section) as ScopeMeta["artifacts"];
  }
  const stream = change.stream ?? meta.stream;
  return serializeScopeMeta({ ...meta, artifacts, ...(stream ? { stream } : {}) });
}

/**
 * The shared scopes' meta.json writes of a publication: a pair this cohort writes gets its record;
 * a pair an earlier version wrote without one gains it now (the bytes were just proved readable);
 * provenance the runtime observed is recorded; a missing meta.json is created.
 */
export function sharedMetaWrites(
  live: ReadonlyMap<string, Buffer | null>,
  keys: ScopeKeys & { readonly cwd: string },
  streams: Readonly<Record<ScopeName, ScopeStream>>,
  writes: Map<string, Buffer | null>,
  options: SharedMetaOptions = {},
): void {
  for (const scope of ["global", "cwd"] as const) {
    const p = scopeFiles(scope, keys);
    const written = writes.has(p.checkpoint) || writes.has(p.patches);
    const checkpoint = written ? (writes.get(p.checkpoint) ?? null) : (live.get(p.checkpoint) ?? null);
    const patches = written ? (writes.get(p.patches) ?? null) : (live.get(p.patches) ?? null);
    const bytes = live.get(p.meta) ?? null;
    const stored = readSharedMeta(bytes, scope, p.meta);
    const stream =
      checkpoint && patches && (written || !stored?.stream)
        ? recordStream(streams[scope], { checkpoint, patches })
        : undefined;
    const provenance = options.provenance?.[scope];
    const prune = options.prune?.[scope];
    if (stored && !stream && !provenance && !prune) continue;
    const change = {
      ...(stream ? { stream } : {}),
      ...(provenance ? { provenance } : {}),
      ...(prune ? { prune } : {}),
    };
    writes.set(p.meta, Buffer.from(sharedMetaWith(bytes, stored, scope, keys, change), "utf8"));
  }
}
