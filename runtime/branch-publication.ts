// The publication of one branch over the Git store (or none, file-only): the driver of its store
// generation's publication actor (runtime/publication.ts), opened when the branch is bound and ended at
// shutdown or adoption; the remote's pusher and sync side built from the store's PublicationPort; and
// what the person is told about pushes that wait and another machine's changes that came in.

import type { InspectionEvent, Observer } from "xstate";
import type { Side } from "../machines/sync.ts";
import type { FetchResult, GitPushResult, PendingRecord, RemoteAnswer } from "../storage/open-store.ts";
import type { BranchState } from "../storage/state-store.ts";
import { errorMessage } from "../storage/core/errors.ts";
import {
  openPublication,
  type PendingPublication,
  type PublicationDriver,
  type PublicationOutcome,
  type PublicationSpawner,
  type PublicationSummary,
  type Pusher,
  type RecordStore,
} from "./publication.ts";
import { syncSideOf, type SyncSide, type SyncView } from "./sync.ts";
import { arrivalNotice, heldNotice } from "./sync-report.ts";

/** A Pusher over the Git backend (kept as a function so this module does not construct backends). */
export function gitPusher(git: GitRemoteSide): Pusher {
  const publicationRemote = git.publicationRemote?.bind(git);
  const askRemote = git.askRemote?.bind(git);
  const ask = askRemote ? { ask: (revision: string, signal: AbortSignal) => askRemote(revision, signal) } : {};
  if (!publicationRemote) return { push: (revision, signal) => git.pushRevision(revision, signal), ...ask };
  // Asked on every cohort while local-only: git runs only when the config file changed.
  let known: { stamp: string; remote: boolean } | null = null;
  const hasRemote = async () => {
    const stamp = (await git.configStamp?.()) ?? null;
    if (stamp !== null && known?.stamp === stamp) return known.remote;
    const remote = (await publicationRemote()) !== null;
    known = stamp === null ? null : { stamp, remote };
    return remote;
  };
  return { push: (revision, signal) => git.pushRevision(revision, signal), hasRemote, ...ask };
}

/** What the Git backend offers publication: its remote side. */
export interface GitRemoteSide {
  pushRevision(revision: string, signal?: AbortSignal): Promise<GitPushResult>;
  publicationRemote?(): Promise<string | null>;
  /** Changes whenever the repository's config file does (null: unknown, ask git). */
  configStamp?(): Promise<string | null>;
  askRemote?(revision: string, signal?: AbortSignal): Promise<RemoteAnswer>;
  fetchBranch?(signal?: AbortSignal): Promise<FetchResult>;
}

/** What publication needs of a Git store (storage's PublicationPort): its remote and the sessions' pending records. */
export interface GitPublicationSide {
  readonly remote: GitRemoteSide;
  /** Classifying, fast-forwarding and joining (storage's GitSync); absent: no sync. */
  readonly sync?: Omit<SyncSide, "fetchBranch">;
  readPending(sessionKey: string): Promise<PendingRecord | null>;
  writePending(sessionKey: string, record: PendingRecord): Promise<void>;
}

/**
 * The publication of one branch: one actor per store generation. The runtime opens it once its
 * branch is bound (start, restore, adoption) and ends it at shutdown or when adoption replaces a
 * file-only generation with a Git one. Opening recovers from the session's record and asks the
 * remote in the background, so start, resume and /tree return once local state is established.
 */
export class BranchPublication {
  private driver: PublicationDriver | null = null;
  /** What the person is told (level: "warning" unless said otherwise). */
  private readonly notify: (message: string, level?: "info" | "warning") => void;
  private readonly inspect: Observer<InspectionEvent> | undefined;
  private readonly spawn: PublicationSpawner | undefined;
  /** The held revision the person was told about (a waiting publication is said once). */
  private said: string | null = null;

  constructor(
    notify: (message: string, level?: "info" | "warning") => void,
    inspect?: Observer<InspectionEvent>,
    spawn?: PublicationSpawner,
  ) {
    this.notify = notify;
    this.inspect = inspect;
    this.spawn = spawn;
  }

  /** Opens this store generation's publication, unless one is open (the branch is already bound to it). */
  async open(runtime: BranchState, git: GitPublicationSide | null): Promise<void> {
    if (this.driver) return;
    const sessionKey = runtime.identity.sessionKey;
    const records: RecordStore | undefined = git
      ? {
          read: () =>
            git.readPending(sessionKey).catch((error: unknown) => {
              this.notify(errorMessage(error));
              throw error;
            }),
          write: (record) => git.writePending(sessionKey, record),
        }
      : undefined;
    this.driver = await openPublication({
      policy: runtime.config.remotePublication,
      pusher: git ? gitPusher(git.remote) : null,
      ...(records ? { records, selected: runtime.pointer.revision } : {}),
      askRestored: true,
      onPendingChange: (pending) => {
        if (!pending?.lastError) return;
        if (this.driver?.summary.status === "waiting") {
          if (this.said === pending.revision) return; // held again by a newer target: said once
          this.said = pending.revision;
          return this.notify(heldNotice(pending.revision), "info");
        }
        this.notify(
          `State Flow: push of ${pending.revision.slice(0, 12)} is pending (${pending.lastError}); ` +
            "it is pushed again after the next run, or now with /state-flow-sync.",
        );
      },
      // (told once per finding, never for a person's /state-flow-sync, whose answer says it: the sync machine)
      onConflict: (lines) => this.notify(`State Flow: ${lines.join("\n")}`),
      onRecordError: (error) =>
        this.notify(
          `State Flow could not record its pending publication (${errorMessage(error)}); after a restart it ` +
            "asks the remote what it still needs instead.",
        ),
      ...(this.inspect ? { inspect: this.inspect } : {}),
      ...(this.spawn ? { spawn: this.spawn } : {}),
      sync: git ? syncSideOf(git) : null,
      onArrival: (arrival, joined) => this.notify(arrivalNotice(arrival, joined), "info"),
    });
    // In the background: start and restore return once local state is established, never after the network;
    // after the restart's question to the remote (one remote process at a time).
    const driver = this.driver;
    void driver
      .settled()
      .then(() => (driver.syncView?.state === "idle" ? driver.sync() : null)) // (unless a command synced first)
      .catch(() => undefined);
  }

  /** /state-flow-sync: fetch and classify now; what it found (null: no remote route). */
  sync(): Promise<SyncView | null> {
    return this.commanded(() => this.driver?.sync(true) ?? Promise.resolve(null));
  }

  /** A person's command: what it started (a push after a join) is done before it answers. */
  private async commanded<T>(work: () => Promise<T>): Promise<T> {
    const result = await work();
    await this.driver?.quiet();
    return result;
  }

  /** Resolves once no push, question or sync is in flight (each bounded by its remote command's limit). */
  async settled(): Promise<void> {
    await this.driver?.settled();
  }

  /** Resolves once nothing is in flight, the sync and what it started included. */
  async quiet(): Promise<void> {
    await this.driver?.quiet();
  }

  /** Pushes the pending target now (/state-flow-sync after a failed push). */
  retry(): Promise<PublicationOutcome> {
    return this.driver?.retry() ?? Promise.resolve({ kind: "idle" });
  }

  /** /state-flow-sync keep-local|take-remote [scope]. */
  choose(side: Side, scope?: string): Promise<SyncView | null> {
    return this.commanded(() => this.driver?.choose(side, scope) ?? Promise.resolve(null));
  }

  get syncView(): SyncView | null {
    return this.driver?.syncView ?? null;
  }

  /**
   * The session ends (print mode ends right after the run whose push just started): a push at work gets
   * up to `ms` to finish, so the other machines see the change now rather than after this one's next
   * start; what does not finish stays pending. A question or a fetch at work is not waited for (null).
   */
  pushFinishing(ms: number): Promise<void> | null {
    const driver = this.driver;
    if (driver?.summary.status !== "pushing") return null; // (the caller fences at once, in the same step)
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((done) => (timer = setTimeout(done, ms)));
    return Promise.race([driver.settled().catch(() => undefined), grace]).finally(() => clearTimeout(timer));
  }

  /** Shutdown: the generation is fenced (its running pushes stop); the status still names its policy. */
  shutdown(): void {
    this.driver?.shutdown();
  }

  /** Adoption into Git: the file-only generation ends, so the next open() starts the Git one. */
  close(): void {
    this.driver?.shutdown();
    this.driver = null;
  }

  /** A new durable revision of the bound branch (`wait` false: activation never waits for a push). */
  async accepted(revision: string, wait: boolean): Promise<void> {
    await this.driver?.accepted(revision, { wait });
  }

  runEnd(): void {
    this.driver?.runEnd();
  }

  /** The pending publication for the status (null = nothing pending or no publication open). */
  get pending(): PendingPublication | null {
    return this.driver?.pending ?? null;
  }

  /** The pending target for the status (null = nothing pending or no publication open). */
  get pendingTarget(): string | null {
    return this.pending?.revision ?? null;
  }

  /** Where the open generation's publication stands (null: none is open). */
  get summary(): PublicationSummary | null {
    return this.driver?.summary ?? null;
  }

  /** The status line's publication label for a store of `storeKind`. */
  label(storeKind: string | undefined): string {
    if (!this.driver) return "none";
    return storeKind !== "git" ? "file-only (nothing to publish)" : this.driver.policy;
  }
}
