// Restoring a revision an older State Flow version recorded (spec 001 "Existing stores and
// migration"). A branch's Git revision that holds no runtime of this session at the Pi-native
// paths may still be this session's, in one of the two older store forms 001 names:
//
// - the pre-0.4 layout (storage/legacy-layout.ts): the same files under SHA-256-suffixed cwd and
//   session directories. It "remains readable at its historical Git revisions"; when HEAD still
//   holds it, startup moves it to Pi-native paths (compare-and-swap, rollback), and when the
//   selected revision is that HEAD the branch gets "an immediate replacement revision pointer";
// - a predecessor's current-state document, the session's state.json (storage/predecessor-snapshot.ts):
//   "revision-linked predecessor snapshots have a one-way restoration path". The live store's
//   state.json files migrate as on start, the snapshot becomes the session's checkpoint, and a
//   start builds the runtime over it at a fresh origin; the branch records that new revision.
//
// Each happens once, and says so: the branch records the result, so the next restore reads it
// as an ordinary current revision.

import { isDeepStrictEqual } from "node:util";
import type { PublicationPolicy } from "../storage/core/codec.ts";
import { headBoundary } from "../storage/core/temporal.ts";
import {
  adoptSuffixedLayout,
  findSuffixedLayout,
  readSuffixedRevision,
  type SuffixedLayout,
} from "../storage/legacy-layout.ts";
import {
  placeSessionBase,
  readPredecessorSnapshot,
  type PredecessorSnapshot,
} from "../storage/predecessor-snapshot.ts";
import { decodeBranchState, type BranchState, type StateStore } from "../storage/state-store.ts";
import { StoreError } from "../storage/store-error.ts";
import { layoutAdoptedNotice, legacyMigratedNotice, predecessorRestoredNotice } from "./notices.ts";

export interface OlderRestore {
  readonly runtime: BranchState;
  /** The branch records `runtime.pointer` in place of the revision it selected. */
  readonly replaces: boolean;
  /** What happened, to be said once. */
  readonly notices: readonly string[];
}

/**
 * The runtime an older store form at `revision` restores to; null when the revision holds
 * neither form for this session (it is then an invalid target, as before). Throws the store's
 * named errors when it is one but cannot be restored.
 */
export async function restoreOlderRevision(
  store: StateStore,
  revision: string,
  policy: PublicationPolicy,
): Promise<OlderRestore | null> {
  const git = store.store.git;
  if (!git || !/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(revision)) return null;
  const layout = await findSuffixedLayout(git, store.identity, revision);
  if (layout) return restoreSuffixed(store, layout);
  const snapshot = await readPredecessorSnapshot(store.store, store.identity, revision);
  return snapshot ? restorePredecessor(store, snapshot, policy) : null;
}

async function restoreSuffixed(store: StateStore, layout: SuffixedLayout): Promise<OlderRestore> {
  const git = store.store.git!;
  // Readable at its historical revision: decoded where it is, nothing moved for it.
  const selected = decodeBranchState(await readSuffixedRevision(git, layout, store.identity), store.identity);
  if (!selected) {
    throw new StoreError(
      "revision-missing",
      `${layout.revision} holds no runtime for session ${store.identity.sessionId} in ${layout.sessionDir}.`,
    );
  }
  const head = (await git.head()).revision;
  const current = head === null ? null : await findSuffixedLayout(git, store.identity, head);
  if (!current) return { runtime: selected, replaces: false, notices: [] };
  // HEAD still holds the layout: its files move, so the next publication finds the shared scopes
  // where it reads them. When HEAD is the selected revision, the moved bytes must read back as the
  // selected runtime did (else the adoption is rolled back), and they replace it.
  const replaced: { runtime?: BranchState } = {};
  const receipt = await adoptSuffixedLayout(store.store, current, store.identity, async (pointer) => {
    if (head !== layout.revision) return;
    const adopted = await store.loadPointer(pointer);
    if (!isDeepStrictEqual(adopted.view, selected.view)) {
      throw new StoreError("migration-failed", `${pointer.revision} does not read back as ${layout.revision} did`);
    }
    replaced.runtime = adopted;
  });
  if (!receipt) return { runtime: selected, replaces: false, notices: [] };
  const moved = `${current.cwdDir}/, ${current.sessionDir}/`;
  const notices = [
    layoutAdoptedNotice(moved, receipt.pointer.revision, replaced.runtime !== undefined, layout.revision),
  ];
  return replaced.runtime
    ? { runtime: replaced.runtime, replaces: true, notices }
    : { runtime: selected, replaces: false, notices };
}

async function restorePredecessor(
  store: StateStore,
  snapshot: PredecessorSnapshot,
  policy: PublicationPolicy,
): Promise<OlderRestore> {
  // The live store's own state.json files first (the shared scopes the runtime adopts live, and
  // this session's, which usually is the snapshot itself): one format before the runtime is built.
  const migrated = await store.migrateLegacy();
  await placeSessionBase(store.store, store.identity, snapshot);
  const runtime = await store.start(null, policy);
  const step = headBoundary(runtime.view.lineage).step;
  return {
    runtime,
    replaces: true,
    notices: [
      ...(migrated ? [legacyMigratedNotice(migrated)] : []),
      predecessorRestoredNotice(snapshot.revision, step, runtime.pointer.revision),
    ],
  };
}
