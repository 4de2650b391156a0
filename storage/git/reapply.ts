// Re-applying this machine's transitions of a shared scope on top of another machine's (the third
// choice for a scope both changed, beside keeping one side). The scope's local transitions since
// the merge base are read back from the branch's commits (each accepted cohort is a commit, so
// every record was committed while it was in the tail) and applied, in order, to the remote's
// state as new transitions of a fresh lineage: their steps follow the remote's, so the stream stays
// one chain and every session adopts the result at a fresh origin, as for any shared change. Each
// patch is validated as an accepted one is; one the remote's state refuses refuses the whole
// choice (nothing written), and one the remote already holds adds no record. When the records do
// not reproduce this machine's state (a tail was folded before it was committed), the difference
// from the base to this machine's state is applied as one transition instead: nothing is lost.

import { randomUUID } from "node:crypto";
import { CHECKPOINT_FILE, META_FILE, PATCHES_FILE, parseScopeStream, serializeScopeStream } from "../core/codec.ts";
import { errorMessage } from "../core/errors.ts";
import { diffFields, hashJson, type JsonObject } from "../core/json.ts";
import { applyScopePatch, type ScopePatch, type ScopeState } from "../core/scope-state.ts";
import {
  applyTransition,
  createView,
  emptyStream,
  streamState,
  type PatchRecord,
  type ScopeStream,
} from "../core/temporal.ts";
import { readSharedMeta, sharedMetaWith } from "../shared-meta.ts";
import { StoreError } from "../store-error.ts";
import { recordStream } from "../stream-record.ts";

/** What re-applying needs of the Git store: commits that touched a path, and files at a revision. */
export interface ReapplySource {
  /** The commits in `from..to` (all of `to`'s when `from` is null) that changed `paths`, oldest first. */
  commits(from: string | null, to: string, paths: readonly string[]): Promise<string[]>;
  files(revision: string, paths: readonly string[]): Promise<ReadonlyMap<string, Buffer | null>>;
}

/** A shared scope's re-applied files and what became of this machine's transitions. */
export interface Reapplied {
  readonly writes: ReadonlyMap<string, Buffer>;
  /** New transitions written on top of the remote's state. */
  readonly applied: number;
  /** This machine's transitions the remote's state already held (no record). */
  readonly present: number;
  /** Whether the records could not be read back one by one, so the whole difference was one transition. */
  readonly combined: boolean;
}

interface ScopePaths {
  readonly name: "global" | "cwd";
  readonly dir: string;
  readonly checkpoint: string;
  readonly patches: string;
  readonly meta: string;
}

/** The files of a shared scope as status names it ("global", "cwd <key>"); null for any other. */
export function sharedScopePaths(scope: string): ScopePaths | null {
  if (scope === "global") return { name: "global", dir: "", ...filesIn("") };
  if (!scope.startsWith("cwd ") || scope.slice(4).includes("/")) return null;
  const key = scope.slice(4);
  return { name: "cwd", dir: key, ...filesIn(`${key}/`) };
}

function filesIn(prefix: string) {
  return { checkpoint: prefix + CHECKPOINT_FILE, patches: prefix + PATCHES_FILE, meta: prefix + META_FILE };
}

function streamAt(paths: ScopePaths, files: ReadonlyMap<string, Buffer | null>): ScopeStream {
  const input = { checkpoint: files.get(paths.checkpoint) ?? null, patches: files.get(paths.patches) ?? null };
  return parseScopeStream(paths.name, input, paths.dir || paths.name);
}

const lastStep = (stream: ScopeStream) => stream.tail[stream.tail.length - 1]?.step ?? stream.checkpoint.through.step;
const json = (state: ScopeState) => state as unknown as JsonObject;
const hashOf = (state: ScopeState) => hashJson(json(state));

/**
 * This machine's transitions of the scope since `base` (every one when `base` is null), oldest first, read
 * from the commits that wrote them; null when they do not lead from the base's state to `local`'s.
 */
async function localRecords(
  source: ReapplySource,
  paths: ScopePaths,
  base: { revision: string | null; stream: ScopeStream },
  local: { revision: string; stream: ScopeStream },
): Promise<PatchRecord[] | null> {
  const members = [paths.checkpoint, paths.patches];
  const commits = await source.commits(base.revision, local.revision, members);
  const after = lastStep(base.stream);
  const byId = new Map<string, PatchRecord>();
  for (const commit of commits) {
    const stream = streamAt(paths, await source.files(commit, members));
    for (const record of stream.tail) if (record.step > after && !byId.has(record.id)) byId.set(record.id, record);
  }
  const records = [...byId.values()].sort((a, b) => a.step - b.step);
  let state = streamState(base.stream);
  for (const record of records) {
    try {
      state = applyScopePatch(state, record.patch, `${paths.patches}#${record.id}`);
    } catch {
      return null; // (a record that does not apply to the state before it: the whole difference is re-applied)
    }
    if (hashOf(state) !== record.hash) return null;
  }
  return hashOf(state) === hashOf(streamState(local.stream)) ? records : null;
}

/**
 * The scope's files with this machine's transitions since `base` re-applied on top of `remoteHead`'s state.
 * Refused (`reapply-refused`, nothing written) when the remote's state does not accept one of them.
 */
export async function reapplyScope(
  source: ReapplySource,
  scope: string,
  revisions: { readonly base: string | null; readonly local: string; readonly remoteHead: string },
): Promise<Reapplied> {
  const paths = sharedScopePaths(scope);
  if (paths === null)
    throw new StoreError(
      "reapply-refused",
      `${scope} cannot be re-applied: only the global and cwd scopes are shared between machines. Choose a side ` +
        `for it instead: /state-flow-sync keep-local ${scope} or /state-flow-sync take-remote ${scope}.`,
    );
  const members = [paths.checkpoint, paths.patches, paths.meta];
  const [baseFiles, localFiles, remoteFiles] = await Promise.all([
    revisions.base === null ? new Map<string, Buffer | null>() : source.files(revisions.base, members),
    source.files(revisions.local, members),
    source.files(revisions.remoteHead, members),
  ]);
  const base = { revision: revisions.base, stream: streamAt(paths, baseFiles) };
  const local = { revision: revisions.local, stream: streamAt(paths, localFiles) };
  const remote = streamAt(paths, remoteFiles);
  const records = await localRecords(source, paths, base, local);
  const whole = diffFields(json(streamState(base.stream)), json(streamState(local.stream)));
  const patches = records ? records.map((record) => record.patch) : whole ? [whole as unknown as ScopePatch] : [];
  // A fresh lineage whose origin follows every step the remote's stream holds (its records precede it).
  const lineage = `l-${randomUUID()}`;
  let view = createView({ id: lineage, originStep: lastStep(remote), window: [] }, streamsWith(paths.name, remote));
  let applied = 0;
  let present = 0;
  for (const [index, patch] of patches.entries()) {
    try {
      view = applyTransition(view, { [paths.name]: patch }, `t-${randomUUID()}`).view;
      applied += 1;
    } catch (error) {
      if ((error as { code?: string }).code === "no-op-cohort") {
        present += 1;
        continue;
      }
      throw new StoreError(
        "reapply-refused",
        `${scope}: this machine's transition ${index + 1} of ${patches.length} cannot be applied to the remote's ` +
          `state (${errorMessage(error)}). Nothing was written. Choose a side for it instead: /state-flow-sync ` +
          `keep-local ${scope} or /state-flow-sync take-remote ${scope}.`,
        { cause: error },
      );
    }
  }
  const stream = view.streams[paths.name];
  const files = serializeScopeStream(stream);
  const checkpoint = Buffer.from(files.checkpoint);
  const patchesBytes = Buffer.from(files.patches);
  const writes = new Map<string, Buffer>([
    [paths.checkpoint, checkpoint],
    [paths.patches, patchesBytes],
  ]);
  // The remote's meta.json (its provenance evidence) with the record of the new pair; none written when
  // neither side has one (files an earlier version wrote load unproven, as they did).
  const metaBytes = remoteFiles.get(paths.meta) ?? localFiles.get(paths.meta) ?? null;
  const stored = readSharedMeta(metaBytes, paths.name, paths.meta);
  if (stored !== null) {
    const identity = stored.identity ?? { cwd: paths.dir, cwdKey: paths.dir };
    const record = recordStream(stream, { checkpoint, patches: patchesBytes });
    writes.set(paths.meta, Buffer.from(sharedMetaWith(metaBytes, stored, paths.name, identity, { stream: record })));
  }
  return { writes, applied, present, combined: records === null };
}

function streamsWith(name: "global" | "cwd", stream: ScopeStream): Record<"global" | "cwd" | "session", ScopeStream> {
  const streams = { global: emptyStream("global"), cwd: emptyStream("cwd"), session: emptyStream("session") };
  return { ...streams, [name]: stream };
}
