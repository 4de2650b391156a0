// Sync with the publication remote (issue "several machines, one remote"): the provider of the
// sync machine (machines/sync.ts) over the Git store — fetch and classify, fast-forward, join —
// and what a caller reads of it: where the branch stands, what arrived, which scopes conflict.
// The publication actor invokes the sync machine while it is on the remote route; this module
// reaches it through the publication actor's snapshot (its child `sync`), sends it nothing
// directly, and waits on it with `waitFor`.

import { fromPromise, waitFor, type ActorRefFrom, type AnyActorRef } from "xstate";
import type { publicationMachine } from "../machines/publication.ts";
import {
  isSyncing,
  openConflicts,
  syncMachine,
  type JoinRequest,
  type Side,
  type SyncArrival,
  type SyncConflict,
  type SyncFinding,
  type SyncSnapshot,
} from "../machines/sync.ts";
import {
  scopeOfPath,
  type FetchResult,
  type JoinPlan,
  type JoinReceipt,
  type SideChoice,
  type Standing,
} from "../storage/open-store.ts";
import type { PublishReceipt } from "../storage/backend.ts";

/** What sync needs of a Git store: the remote's fetch and the store's sync (storage/git/git-sync.ts). */
export interface SyncSide {
  fetchBranch(signal?: AbortSignal): Promise<FetchResult>;
  standing(fetched: FetchResult): Promise<Standing>;
  plan(local: string, remoteHead: string, base: string | null): Promise<JoinPlan>;
  fastForward(local: string, remoteHead: string, remote: string): Promise<PublishReceipt>;
  join(
    standing: { local: string; remoteHead: string; remote: string },
    plan: JoinPlan,
    choices: ReadonlyMap<string, SideChoice>,
  ): Promise<JoinReceipt>;
}

/** The finding for a standing, with the scopes each side changed when the lines diverged or are unrelated. */
async function findingOf(side: SyncSide, standing: Standing): Promise<SyncFinding> {
  const none = { fromRemote: [], conflicts: [], localStartOnly: false };
  switch (standing.kind) {
    case "local-only":
      return { standing: "local-only", remote: null, local: null, remoteHead: null, ...none };
    case "unreachable":
      return {
        standing: "unreachable",
        remote: standing.remote,
        local: null,
        remoteHead: null,
        ...none,
        detail: standing.detail,
      };
    case "equal":
      return { standing: "equal", remote: standing.remote, local: standing.head, remoteHead: standing.head, ...none };
    case "ahead":
    case "behind":
      return { ...standing, standing: standing.kind, ...none };
    case "diverged":
    case "unrelated": {
      const base = standing.kind === "diverged" ? standing.base : null;
      const plan = await side.plan(standing.local, standing.remoteHead, base);
      const { remote, local, remoteHead } = standing;
      return { standing: standing.kind, remote, local, remoteHead, ...plan };
    }
  }
}

function arrivalOf(receipt: PublishReceipt, remote: string, scopes?: readonly string[]): SyncArrival {
  const changed = scopes ?? [...new Set(receipt.changed.map(scopeOfPath))].sort();
  return { revision: receipt.pointer.revision, remote, scopes: changed };
}

/** The sync machine with the actors that reach the Git store and its remote. */
export function providedSync(side: SyncSide | null) {
  return syncMachine.provide({
    actors: {
      fetch: fromPromise<SyncFinding>(async ({ signal }) => {
        if (!side) throw new Error("no Git store to fetch into");
        return findingOf(side, await side.standing(await side.fetchBranch(signal)));
      }),
      fastForward: fromPromise<SyncArrival, SyncFinding>(async ({ input }) => {
        if (!side || input.local === null || input.remoteHead === null || input.remote === null)
          throw new Error("nothing to fast-forward to");
        return arrivalOf(await side.fastForward(input.local, input.remoteHead, input.remote), input.remote);
      }),
      join: fromPromise<SyncArrival, JoinRequest>(async ({ input }) => {
        const { finding, choices } = input;
        if (!side || finding.local === null || finding.remoteHead === null || finding.remote === null)
          throw new Error("nothing to join");
        const standing = { local: finding.local, remoteHead: finding.remoteHead, remote: finding.remote };
        const plan: JoinPlan = { ...finding, kept: [] };
        const receipt = await side.join(standing, plan, new Map(Object.entries(choices)));
        const taken = [...finding.fromRemote, ...Object.keys(choices).filter((scope) => choices[scope] !== "local")];
        const reapplied = Object.fromEntries(
          Object.entries(receipt.reapplied).map(([scope, { applied, present }]) => [scope, { applied, present }]),
        );
        const arrival = arrivalOf(receipt, finding.remote, taken.sort());
        return Object.keys(reapplied).length > 0 ? { ...arrival, reapplied } : arrival;
      }),
    },
  });
}

/** What a caller reads of the sync: its state, the last finding, what arrived, why it failed. */
export interface SyncView {
  /** The sync machine's state: idle, fetching, fastForwarding, joining, equal, ahead, behind, … */
  readonly state: string;
  readonly finding: SyncFinding | null;
  /** Conflicting scopes still without a side. */
  readonly open: readonly SyncConflict[];
  readonly arrival: SyncArrival | null;
  readonly error: string | null;
}

type PublicationRef = ActorRefFrom<typeof publicationMachine>;

function syncChild(publication: PublicationRef): AnyActorRef | undefined {
  return (publication.getSnapshot().children as Record<string, AnyActorRef | undefined>).sync;
}

function viewOf(snapshot: SyncSnapshot): SyncView {
  const { finding, arrival, error } = snapshot.context;
  return { state: String(snapshot.value), finding, open: openConflicts(snapshot.context), arrival, error };
}

/** Resolves once the sync is not fetching, fast-forwarding or joining (at once off the remote route). */
export async function syncQuiet(publication: PublicationRef): Promise<void> {
  const child = syncChild(publication);
  if (!child) return;
  await waitFor(child, (s: SyncSnapshot) => s.status !== "active" || !isSyncing(s)).catch(() => undefined);
}

/** Where the sync stands now; null when the publication is not on the remote route. */
export function syncView(publication: PublicationRef): SyncView | null {
  const child = syncChild(publication);
  return child ? viewOf(child.getSnapshot() as SyncSnapshot) : null;
}

/**
 * Sends `event` (SYNC, or CHOOSE with a side) through the publication actor and waits until the sync
 * settles on a standing newer than the one before; null when the publication is not on the remote route.
 */
export async function syncNow(
  publication: PublicationRef,
  event: { type: "SYNC"; asked?: boolean } | { type: "CHOOSE"; side: Side; scope?: string },
): Promise<SyncView | null> {
  const child = syncChild(publication);
  if (!child) return null;
  const before = (child.getSnapshot() as SyncSnapshot).context.seq;
  publication.send(event);
  const now = child.getSnapshot() as SyncSnapshot;
  // A choice that leaves a conflicting scope without a side (or an event the state ignores) starts nothing.
  if (!isSyncing(now) && now.context.seq === before) return viewOf(now);
  const settled = await waitFor(
    child,
    (s: SyncSnapshot) => s.status !== "active" || (!isSyncing(s) && s.context.seq > before),
  ).catch(() => child.getSnapshot() as SyncSnapshot);
  return viewOf(settled as SyncSnapshot);
}

/**
 * Calls `onArrival` for every fast-forward or join of the publication actor's sync, and `onConflict` with the
 * view when it tells a conflict (each child watched once).
 */
export function watchArrivals(
  publication: PublicationRef,
  onArrival: (arrival: SyncArrival, joined: boolean) => void,
  onConflict?: (view: SyncView) => void,
): () => void {
  const watched = new WeakSet<AnyActorRef>();
  const attach = () => {
    const child = syncChild(publication);
    if (!child || watched.has(child)) return;
    watched.add(child);
    child.on("sync.arrived", (event: { arrival: SyncArrival; joined: boolean }) =>
      onArrival(event.arrival, event.joined),
    );
    // (read once the step that emitted it is over: the snapshot then holds its state)
    if (onConflict)
      child.on("sync.conflict", () => queueMicrotask(() => onConflict(viewOf(child.getSnapshot() as SyncSnapshot))));
  };
  attach();
  const subscription = publication.subscribe({ next: attach, error: () => undefined });
  return () => subscription.unsubscribe();
}

/** The sync's view of a Git store: its remote's fetch and the store's sync; null without either. */
export function syncSideOf(git: {
  readonly remote: { fetchBranch?(signal?: AbortSignal): Promise<FetchResult> };
  readonly sync?: Omit<SyncSide, "fetchBranch">;
}): SyncSide | null {
  const fetchBranch = git.remote.fetchBranch?.bind(git.remote);
  const sync = git.sync;
  if (!fetchBranch || !sync) return null;
  return {
    fetchBranch,
    standing: (fetched) => sync.standing(fetched),
    plan: (local, remoteHead, base) => sync.plan(local, remoteHead, base),
    fastForward: (local, remoteHead, remote) => sync.fastForward(local, remoteHead, remote),
    join: (standing, plan, choices) => sync.join(standing, plan, choices),
  };
}
