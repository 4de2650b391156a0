// The semantic store of one physical Pi session: turns the byte-level store (file-only or Git)
// into branch states — a validated temporal view plus runtime meta/config and the exact
// cohort basis it was read from — and publishes accepted transitions and config-only changes.
//
// Rules kept here (spec 001 "Temporal storage", "Runtime ownership", "File-only recovery"):
// every accepted cohort is one publication of the changed checkpoint/tail pairs plus the session
// meta; config-only changes (stop/start) create no semantic history; shared global/cwd streams
// that advanced under another lineage are adopted at a fresh proven origin, never overwritten;
// a scope this cohort patches that advanced elsewhere is a named conflict.

import { rmdir } from "node:fs/promises";
import { join } from "node:path";
import {
  parseRuntimeMeta,
  serializeRuntimeMeta,
  serializeScopeStream,
  serializeSessionConfig,
  type PublicationPolicy,
  type RuntimeMeta,
  type SessionConfig,
} from "./core/codec.ts";
import { stageCohort, type StagedCohort } from "./core/cohort.ts";
import { StateFlowError, errorMessage } from "./core/errors.ts";
import type { ScopeName, ScopePatch, ScopeState } from "./core/scope-state.ts";
import { cohortPaths, scopeFiles } from "./layout.ts";
import { assertStorePath, readOwnedFilesSync } from "./fs/fs-safe.ts";
import { lockExists, lockHeldError, ownerIsGone, readLockOwner } from "./fs/lock.ts";
import { StoreError, isStoreError } from "./store-error.ts";
import { isFilePointer, loadIfCurrent, provesFileCohort, sameBytes, sameHashes } from "./cohort-basis.ts";
import { migrateLegacyState, type LegacyMigrationResult, type MigrateOptions } from "./legacy-migration.ts";
import { sharedMetaWrites, type SharedMetaOptions, type SharedScope } from "./shared-meta.ts";
import { recordStream, type StoreKind } from "./stream-record.ts";
import type { CohortSnapshot, Store, StorePointer } from "./open-store.ts";
import {
  adoptShared,
  checkCwdOwner,
  checkSessionOwner,
  decodeBranchState,
  file,
  newLineageId,
  provedPair,
  readStreams,
  type BranchState,
  type SessionIdentity,
} from "./branch-state.ts";

import { cloneJson, hashJson, type JsonObject } from "./core/json.ts";
import { emptyStream, originateView, type Boundary, type ScopeStream, type TemporalView } from "./core/temporal.ts";

export { decodeBranchState, type BranchState, type SessionIdentity };

const utf8 = (text: string): Buffer => Buffer.from(text, "utf8");

/** What a fork copies from its parent session: that session's layer at one boundary, and where it was read. */
export interface ForkCopy {
  /** The parent's session key. */
  sessionKey: string;
  /** The parent's revision the fork point recorded. */
  revision: string;
  /** The parent's boundary the copy was read at. */
  boundary: Boundary;
  state: ScopeState;
}

/** The fork's session stream: the copy as its checkpoint, anchored at the parent's boundary (before its origin). */
function copiedStream(copy: ForkCopy): ScopeStream {
  const state = cloneJson(copy.state as unknown as JsonObject);
  return {
    scope: "session",
    checkpoint: { through: { ...copy.boundary }, state: state as never, hash: hashJson(state) },
    tail: [],
  };
}

export interface CommitOptions extends SharedMetaOptions {
  /** The cohort completes an accepted run (counted in meta). */
  run?: boolean;
  /** A rule over every scope's state before and after the staged cohort; throwing refuses it, nothing written. */
  check?: (before: Readonly<Record<ScopeName, ScopeState>>, after: Readonly<Record<ScopeName, ScopeState>>) => void;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Another publisher mid-flight is transient: its lock is held (reads of a half-renamed cohort
 * are refused as lock-held) or a member moved between our read and our lock (stale-basis, after
 * which the work is restaged on the fresh cohort). Retried for about two seconds, at random
 * intervals so that sessions waiting on one another do not keep colliding in step; a lock left by
 * a dead writer then surfaces as the named lock-held error.
 */
async function retryTransient<T>(work: () => Promise<T>, attempts = 70): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const transient = isStoreError(error, "lock-held") || isStoreError(error, "stale-basis");
      if (!transient || attempt >= attempts) throw error;
      await sleep(10 + Math.random() * 40);
    }
  }
}

/** Whether a live read holds the cohort a pointer names: its Git revision is HEAD, or its file cohort is live. */
function holdsPointer(live: CohortSnapshot, pointer: StorePointer): boolean {
  if (isFilePointer(pointer)) return provesFileCohort(pointer, live.hashes);
  return live.pointer?.revision === pointer.revision;
}

/** A refusal judged on the runtime's own basis, which may be stale: decided again on a fresh read. */
class JudgedOnOwnBasis extends Error {
  constructor(refusal: unknown) {
    super("refused on the runtime's own basis", { cause: refusal });
  }
}

/** Runs the staging of a publication on the runtime's own basis; its refusals are re-decided on a fresh read. */
function onOwnBasis<T>(stage: () => T): T {
  try {
    return stage();
  } catch (error) {
    throw new JudgedOnOwnBasis(error);
  }
}

/** What a publication on the runtime's own basis builds on: that basis and the runtime's view, nothing adopted. */
function ownBasisOf(runtime: BranchState): { live: CohortSnapshot; view: TemporalView; moved: SharedScope[] } {
  return { live: runtime.basis, view: runtime.view, moved: [] };
}

export interface CommitResult {
  runtime: BranchState;
  staged: StagedCohort;
}

export class StateStore {
  readonly store: Store;
  readonly identity: SessionIdentity;
  readonly paths: string[];
  /** The store's root and kind, for the commands a refusal names. */
  private readonly where: StoreKind;
  /** Whether the live cohort was, at this session's last fresh read, the one its runtime last published or read. */
  private ownBasisHolds = true;

  constructor(store: Store, identity: SessionIdentity) {
    this.store = store;
    this.where = { root: store.root, git: store.kind === "git" };
    this.identity = identity;
    this.paths = cohortPaths(identity);
  }

  async loadCurrentSnapshot(): Promise<CohortSnapshot> {
    return this.store.loadCurrent(this.paths);
  }

  /** This session's runtime from the live files (null when it has none). */
  async loadCurrent(): Promise<BranchState | null> {
    return decodeBranchState(await this.loadCurrentSnapshot(), this.identity, { store: this.where });
  }

  /**
   * The runtime a Pi checkpoint names, read without moving the worktree. `live`: the live cohort
   * the caller has just read (readLive); a pointer it holds is decoded from it instead of read again.
   */
  async loadPointer(pointer: StorePointer, live: CohortSnapshot | null = null): Promise<BranchState> {
    // A restore waits only briefly for another writer (one publication takes tens of ms); a lock
    // held longer is reported so the branch retains its pointer for an explicit retry.
    const snapshot =
      live !== null && holdsPointer(live, pointer)
        ? isFilePointer(pointer)
          ? loadIfCurrent(pointer, live)
          : live
        : await retryTransient(() => this.store.loadRevision(pointer, this.paths), 8).catch((error: unknown) =>
            this.namedDamage(error, pointer),
          );
    const runtime = this.decodeProved(snapshot, isFilePointer(pointer));
    if (!runtime) {
      throw new StoreError(
        "revision-missing",
        `${pointer.revision} holds no runtime for session ${this.identity.sessionId}.`,
      );
    }
    return runtime;
  }

  /**
   * A file cohort's live files decoded for its pointer. Damage to them (a pair that disagrees with
   * its record, an unreadable meta.json) makes the pointer's cohort unavailable, and the refusal says
   * which file and what to do; the branch keeps its pointer for a retry after the repair (spec 001:
   * unavailable references retain the selected pointer). A Git revision's damage is an invalid target.
   */
  private decodeProved(snapshot: CohortSnapshot, filePointer: boolean): BranchState | null {
    try {
      return decodeBranchState(snapshot, this.identity, { liveShared: filePointer, store: this.where });
    } catch (error) {
      if (!filePointer || !(isStoreError(error, "stream-mismatch") || isStoreError(error, "invalid-scope-meta"))) {
        throw error;
      }
      throw new StoreError("pointer-unavailable", error.message, { file: error.file, cause: error });
    }
  }

  /**
   * A file pointer the live session files no longer form: when those files are damaged rather than
   * replaced by a later cohort, the damage is the cause the refusal names, not the pointer.
   */
  private async namedDamage(error: unknown, pointer: StorePointer): Promise<never> {
    if (!isStoreError(error, "pointer-unavailable")) throw error;
    const live = await this.loadCurrentSnapshot().catch(() => null);
    if (live !== null) {
      try {
        decodeBranchState(live, this.identity, { store: this.where });
      } catch (damage) {
        const named =
          isStoreError(damage, "stream-mismatch") ||
          isStoreError(damage, "partial-pair") ||
          damage instanceof StateFlowError;
        if (named) {
          throw new StoreError(
            "pointer-unavailable",
            `The file cohort ${pointer.revision} cannot be proven: this session's files are damaged. ` +
              errorMessage(damage),
            { file: (damage as { file?: string }).file, cause: damage },
          );
        }
      }
    }
    throw error;
  }

  /**
   * Throws the named lock-held error when a publisher of this host died holding the store's
   * lock: until that one documented step is taken, no restore can tell which cohort it left.
   */
  async assertNoInterruptedPublication(): Promise<void> {
    if (!(await lockExists(this.store.lockPath))) return;
    const owner = await readLockOwner(this.store.lockPath);
    if (ownerIsGone(owner)) throw lockHeldError(this.store.lockPath, owner);
  }

  /**
   * The live cohort for a restore, waiting briefly for another writer; null when it cannot be read
   * (the branch's own pointer then decides). Reading it finishes a publication a kill interrupted
   * (its journal).
   */
  async readLive(): Promise<CohortSnapshot | null> {
    return retryTransient(() => this.loadCurrentSnapshot(), 8).catch((error: unknown) => {
      if (isStoreError(error, "lock-held")) throw error;
      return null;
    });
  }

  /**
   * The cohort the store accepted on top of `revision` that the branch never recorded: the
   * process was killed after the publication and before Pi's branch entry. It is this session's
   * next cohort (its meta names `revision` as predecessor: a transition, or a stop when its
   * config is disabled) and no entry in `recorded` names it. null when there is none (the usual
   * case: one read of the live session meta). `read`: the live cohort the caller just read (readLive).
   */
  async unrecordedSuccessor(
    revision: string,
    recorded: ReadonlySet<string>,
    read: CohortSnapshot | null | undefined = undefined,
  ): Promise<BranchState | null> {
    const metaPath = scopeFiles("session", this.identity).meta;
    const live = read === undefined ? await this.readLive() : read;
    const bytes = live?.files.get(metaPath) ?? null;
    if (live === null || bytes === null) return null;
    let predecessor: string | null | undefined;
    try {
      predecessor = parseRuntimeMeta(bytes, metaPath).predecessor;
    } catch {
      return null; // an unreadable live meta is not evidence of anything; the branch's own pointer decides
    }
    if (predecessor !== revision) return null;
    // "self": the commit that last wrote the config/meta pair, not HEAD (unrelated commits may follow it).
    const pair = [scopeFiles("session", this.identity).config!, metaPath];
    const pointer = this.store.git ? await this.store.git.lastCommitOf(pair) : live.pointer;
    if (pointer === null || recorded.has(pointer.revision)) return null;
    const successor = await this.loadPointer(pointer).catch(() => null);
    return successor?.meta.predecessor === revision ? successor : null;
  }

  /**
   * Explicit or automatic start. With a selected runtime (restart after stop) only the config
   * changes. Without one, an empty session origin is established over the live shared scopes,
   * even if a later branch already wrote files for this session (those stay in Git history).
   */
  async start(selected: BranchState | null, policy: PublicationPolicy): Promise<BranchState> {
    if (selected) {
      return this.publishConfig(selected, { ...selected.config, enabled: true }, "state-flow: start");
    }
    return retryTransient(() => this.startOrigin(policy));
  }

  /**
   * A fork's start: a new session origin whose session layer is its own copy of the parent's
   * session layer at `copy.boundary` (its checkpoint names that boundary; meta records where it came
   * from), over the live shared scopes. The parent's files are not touched.
   */
  async startFork(copy: ForkCopy, policy: PublicationPolicy): Promise<BranchState> {
    return retryTransient(() => this.startOrigin(policy, copy));
  }

  private async startOrigin(policy: PublicationPolicy, copy?: ForkCopy): Promise<BranchState> {
    const live = await this.loadCurrentSnapshot();
    checkCwdOwner(live, this.identity, this.store.root);
    const streams = readStreams(live, this.identity, this.where);
    // Every publication of a session stream writes its meta too: a session checkpoint without one
    // is a migrated legacy state.json, this session's base. Otherwise a start begins a new layer.
    const migrated =
      file(live, scopeFiles("session", this.identity).meta) === null &&
      file(live, scopeFiles("session", this.identity).checkpoint) !== null;
    const view = originateView(newLineageId(), {
      global: streams.global,
      cwd: streams.cwd,
      session: copy ? copiedStream(copy) : migrated ? streams.session : emptyStream("session"),
    });
    const id = this.identity;
    const unrecorded: RuntimeMeta = {
      version: 1,
      kind: "session",
      identity: { cwd: id.cwd, cwdKey: id.cwdKey, sessionId: id.sessionId, sessionKey: id.sessionKey },
      lineage: view.lineage,
      counters: { transitions: 0, runs: 0 },
      revision: "self",
      publication: { intent: "unconfirmed" },
      artifacts: {},
      predecessor: null,
      ...(copy ? { fork: { sessionKey: copy.sessionKey, revision: copy.revision, boundary: copy.boundary } } : {}),
    };
    const config: SessionConfig = { version: 1, enabled: true, remotePublication: policy };
    const { writes, meta } = this.sessionWrites(view, unrecorded, live);
    writes.set(scopeFiles("session", id).config!, utf8(serializeSessionConfig(config)));
    sharedMetaWrites(live.files, id, view.streams, writes);
    const receipt = await this.store.publish({
      basis: live,
      writes,
      message: copy
        ? `state-flow: start session ${id.sessionKey} as a fork of ${copy.sessionKey} at step ${copy.boundary.step}`
        : `state-flow: start session ${id.sessionKey}`,
    });
    return this.afterPublish(
      { identity: id, pointer: receipt.pointer, view, meta, config, basis: live },
      live,
      writes,
      receipt.pointer,
      receipt.hashes,
    );
  }

  /**
   * Removes this session's files, in one publication, when they hold nothing but an empty start:
   * no transition, an empty session layer (a migrated legacy state is kept), and the live files
   * still exactly those the runtime published or read (nobody wrote the session since). For a
   * session Pi never saved, which nobody can resume. Returns the removed folder (relative to the
   * store root), or null when the files hold more than that and stay.
   */
  async discardEmptyStart(runtime: BranchState): Promise<string | null> {
    const session = scopeFiles("session", this.identity);
    const members = [session.checkpoint, session.patches, session.meta, session.config!];
    const stream = runtime.view.streams.session;
    const empty = stream.tail.length === 0 && stream.checkpoint.hash === emptyStream("session").checkpoint.hash;
    if (runtime.meta.counters.transitions > 0 || !empty) return null;
    return retryTransient(async () => {
      const live = await this.loadCurrentSnapshot();
      if (!members.every((path) => sameBytes(file(live, path), file(runtime.basis, path)))) return null;
      const writes = new Map(members.map((path) => [path, null]));
      const message = `state-flow: remove session ${this.identity.sessionKey} (Pi never saved the session)`;
      await this.store.publish({ basis: live, writes, message });
      // Both backends remove files only; the emptied folder goes too (rmdir takes only an empty
      // directory and never follows a link, so nothing else can be lost; a failure leaves it empty).
      await rmdir(join(this.store.root, ...assertStorePath(session.dir))).catch(() => undefined);
      return session.dir;
    });
  }

  /**
   * Converts this session's legacy state.json snapshots into checkpoints (one publication, verified,
   * exact old bytes restored on failure); null when there are none. Only a start that establishes
   * the runtime calls it: read-only startup, status and restore never write.
   */
  async migrateLegacy(options?: MigrateOptions): Promise<LegacyMigrationResult | null> {
    return retryTransient(() => migrateLegacyState(this.store, this.identity, options));
  }

  /** Stop (or any config- or provenance-only change): no semantic history step. */
  async publishConfig(
    runtime: BranchState,
    config: SessionConfig,
    message: string,
    shared: SharedMetaOptions = {},
  ): Promise<BranchState> {
    return this.publishOnOwnBasis((ownBasis) => this.publishConfigOnce(runtime, config, message, shared, ownBasis));
  }

  private async publishConfigOnce(
    runtime: BranchState,
    config: SessionConfig,
    message: string,
    shared: SharedMetaOptions,
    ownBasis: boolean,
  ): Promise<BranchState> {
    const { live, view } = ownBasis ? ownBasisOf(runtime) : await this.prepare(runtime);
    const unrecorded = { ...runtime.meta, lineage: view.lineage, predecessor: runtime.pointer.revision };
    const { writes, meta } = this.sessionWrites(view, unrecorded, live);
    writes.set(scopeFiles("session", this.identity).config!, utf8(serializeSessionConfig(config)));
    if (shared.provenance) sharedMetaWrites(live.files, this.identity, view.streams, writes, shared);
    const receipt = await this.store.publish({ basis: live, writes, message, basisUnread: ownBasis });
    return this.afterPublish({ ...runtime, view, meta, config }, live, writes, receipt.pointer, receipt.hashes);
  }

  /**
   * Stages and durably publishes one cohort. Shared scopes that advanced elsewhere are adopted
   * first when this cohort does not patch them; a patched scope that advanced is a conflict.
   */
  async commit(
    runtime: BranchState,
    patches: Partial<Record<ScopeName, ScopePatch>>,
    message: string,
    options: CommitOptions = {},
  ): Promise<CommitResult> {
    return this.publishOnOwnBasis((ownBasis) => this.commitOnce(runtime, patches, message, options, ownBasis));
  }

  private async commitOnce(
    runtime: BranchState,
    patches: Partial<Record<ScopeName, ScopePatch>>,
    message: string,
    options: CommitOptions,
    ownBasis: boolean,
  ): Promise<CommitResult> {
    const { live, view, moved } = ownBasis ? ownBasisOf(runtime) : await this.prepare(runtime);
    const conflict = moved.find((scope) => patches[scope]);
    if (conflict) {
      throw new StateFlowError(
        "shared-scope-advanced",
        `the ${conflict} scope advanced in another session since this branch read it; nothing was written. ` +
          `Re-read the current ${conflict} state (read_state with scope "${conflict}") and patch again.`,
        conflict,
      );
    }
    const stage = () => {
      const staged = stageCohort(view, patches);
      options.check?.(view.current, staged.view.current);
      return staged;
    };
    const staged = ownBasis ? onOwnBasis(stage) : stage();
    const unrecorded: RuntimeMeta = {
      ...runtime.meta,
      predecessor: runtime.pointer.revision,
      lineage: staged.view.lineage,
      counters: {
        transitions: runtime.meta.counters.transitions + 1,
        runs: runtime.meta.counters.runs + (options.run ? 1 : 0),
      },
    };
    const { writes, meta } = this.sessionWrites(staged.view, unrecorded, live);
    for (const scope of ["global", "cwd"] as const) {
      if (!staged.cohort.records[scope]) continue;
      const files = serializeScopeStream(staged.view.streams[scope]);
      const p = scopeFiles(scope, this.identity);
      writes.set(p.checkpoint, utf8(files.checkpoint));
      writes.set(p.patches, utf8(files.patches));
    }
    sharedMetaWrites(live.files, this.identity, staged.view.streams, writes, options);
    const receipt = await this.store.publish({ basis: live, writes, message, basisUnread: ownBasis });
    const next = this.afterPublish(
      { ...runtime, view: staged.view, meta },
      live,
      writes,
      receipt.pointer,
      receipt.hashes,
    );
    return { runtime: next, staged };
  }

  /**
   * A session usually publishes on the cohort it published or read last. While that has held, the
   * work is tried on that basis first, without reading the live cohort: the publication's per-file
   * compare-and-swap reads every member once, under the lock (Git also requires HEAD to still be
   * the basis revision). When the basis is stale, another writer holds the lock, or the staging
   * refused the patch on a view that may be stale, the work runs again on a fresh read of the live
   * cohort, and that outcome stands. A publication that failed in any other way is not repeated:
   * it may have been committed. Sessions that keep advancing a shared store read it fresh, until a
   * fresh read finds that nobody else published in between.
   */
  private async publishOnOwnBasis<T>(work: (ownBasis: boolean) => Promise<T>): Promise<T> {
    if (this.ownBasisHolds) {
      try {
        return await work(true);
      } catch (error) {
        const stale = isStoreError(error, "stale-basis") || isStoreError(error, "lock-held");
        if (!stale && !(error instanceof JudgedOnOwnBasis)) throw error;
        if (stale) this.ownBasisHolds = false;
      }
    }
    return retryTransient(() => work(false));
  }

  /**
   * The runtime re-read over the live cohort, nothing written: shared scopes that advanced in
   * another session are adopted (at a fresh origin when they left its lineage) and the live files
   * become its basis. After a conflict this is what makes "re-read and patch again" work: the
   * branch's own pointer and session layer stay as they are.
   */
  async refresh(runtime: BranchState): Promise<BranchState> {
    const { live, view } = await retryTransient(() => this.prepare(runtime));
    return { ...runtime, view, basis: live };
  }

  /**
   * What moved in the live store since this branch read it, from one read of each scope's meta.json
   * (no pair, no git process): every publication rewrites the meta.json of each scope it changes,
   * with the record of the pair it wrote (stream-record.ts). `selectedPast`: the live session layer
   * is not the one this branch holds — the branch was restored to a past point (or a later branch
   * of this session published since), and keeps its selected past until its own next publication.
   * `shared`: the shared scopes whose meta.json differs; `refresh` adopts them.
   */
  liveMoves(runtime: BranchState): { selectedPast: boolean; shared: SharedScope[] } {
    const meta = (scope: ScopeName) => scopeFiles(scope, this.identity).meta;
    const live = readOwnedFilesSync(this.store.root, [meta("session"), meta("global"), meta("cwd")]);
    const moved = (scope: ScopeName) => !sameBytes(live.get(meta(scope)) ?? null, file(runtime.basis, meta(scope)));
    return { selectedPast: moved("session"), shared: (["global", "cwd"] as const).filter(moved) };
  }

  /**
   * The live cohort (checked to be this session's) and the view to build on: shared streams that
   * moved since the runtime read them are adopted (at a fresh origin when they left its lineage).
   */
  private async prepare(
    runtime: BranchState,
  ): Promise<{ live: CohortSnapshot; view: TemporalView; moved: ("global" | "cwd")[] }> {
    // A branch restored from a file cohort that Git's HEAD does not hold yet proves those live
    // files by its pointer; its next publication commits them (adoption into Git).
    const live = await this.store.loadCurrent(this.paths, { provenCohort: runtime.basis.pointer });
    this.ownBasisHolds = sameHashes(live.hashes, runtime.basis.hashes);
    checkCwdOwner(live, this.identity, this.store.root);
    const metaPath = scopeFiles("session", this.identity).meta;
    const liveMeta = file(live, metaPath);
    if (liveMeta) checkSessionOwner(parseRuntimeMeta(liveMeta, metaPath), this.identity, metaPath);
    const moved = (["global", "cwd"] as const).filter((scope) => {
      const p = scopeFiles(scope, this.identity);
      return (
        !sameBytes(file(live, p.checkpoint), file(runtime.basis, p.checkpoint)) ||
        !sameBytes(file(live, p.patches), file(runtime.basis, p.patches))
      );
    });
    // Pairs that look unmoved are proved too (a fresh read is where damage shows, e.g. a meta.json
    // put back); moved ones are proved once, by their adoption below.
    for (const scope of ["global", "cwd"] as const) {
      if (!moved.includes(scope)) provedPair(live, this.identity, scope, this.where);
    }
    return { live, view: moved.length > 0 ? adoptShared(runtime, live, this.where) : runtime.view, moved };
  }

  /**
   * The session layer and meta this branch publishes. A restored branch's session layer replaces
   * whatever a later branch left in the live session files (that stays recoverable from its revision).
   */
  private sessionWrites(
    view: TemporalView,
    unrecorded: RuntimeMeta,
    live: CohortSnapshot,
  ): { writes: Map<string, Buffer | null>; meta: RuntimeMeta } {
    const writes = new Map<string, Buffer | null>();
    const p = scopeFiles("session", this.identity);
    const files = serializeScopeStream(view.streams.session);
    const pair = { checkpoint: utf8(files.checkpoint), patches: utf8(files.patches) };
    const meta: RuntimeMeta = { ...unrecorded, stream: recordStream(view.streams.session, pair) };
    const put = (path: string, bytes: Buffer) => {
      if (!sameBytes(file(live, path), bytes)) writes.set(path, bytes);
    };
    put(p.checkpoint, pair.checkpoint);
    put(p.patches, pair.patches);
    put(p.meta, utf8(serializeRuntimeMeta(meta)));
    return { writes, meta };
  }

  private afterPublish(
    runtime: BranchState,
    live: CohortSnapshot,
    writes: ReadonlyMap<string, Buffer | null>,
    pointer: StorePointer,
    hashes: ReadonlyMap<string, string | null>,
  ): BranchState {
    const files = new Map(live.files);
    for (const [path, bytes] of writes) files.set(path, bytes);
    return { ...runtime, pointer, basis: { pointer, files, hashes } };
  }
}
