// Sync machine: where the store's branch stands against the publication remote's, and what is
// done about it (issue "several machines, one remote"; spec 001 push-only publication, no
// automatic merge of semantic state). Invoked by the publication machine while it is on the
// remote route; the publication machine forwards SYNC and CHOOSE to it. Effects are invoked
// actors whose implementations the runtime provides (`machine.provide({ actors })`):
// - `fetch` (state `fetching`): fetches the remote's branch into its tracking ref and classifies
//   the branch against it, with the scopes each side changed when the lines diverged;
// - `fastForward` (state `fastForwarding`): behind, so the branch moves to the fetched commit
//   through the journaled publication;
// - `join` (state `joining`): diverged, so one two-parent commit takes each scope from the side
//   that changed it (and a conflicting scope from the side the person chose).
// Each settled standing is a state, shown in status. The parent hears `SYNCED{standing}` after
// every finding and `JOINED{target}` when a join committed (the publication then pushes it).
// Pure: imports only xstate.
import { assign, emit, enqueueActions, fromPromise, setup, type SnapshotFrom } from "xstate";

export type Standing = "equal" | "ahead" | "behind" | "diverged" | "unrelated" | "unreachable" | "local-only";
/** A conflicting scope's choice: this machine's values, the remote's, or this machine's changes re-applied on it. */
export type Side = "local" | "remote" | "reapply";

/** A scope changed on both sides since the merge base. */
export interface SyncConflict {
  readonly scope: string;
  /** The files each side changed. */
  readonly localPaths: readonly string[];
  readonly remotePaths: readonly string[];
  /** A global or cwd scope: the state paths each side changed (what the person compares). */
  readonly localChanges?: readonly string[];
  readonly remoteChanges?: readonly string[];
}

/** What a fetch found (the `fetch` actor's output). */
export interface SyncFinding {
  readonly standing: Standing;
  readonly remote: string | null;
  readonly local: string | null;
  readonly remoteHead: string | null;
  /** Diverged or unrelated: scopes the remote alone changed (taken from it by a join). */
  readonly fromRemote: readonly string[];
  readonly conflicts: readonly SyncConflict[];
  /** Whether this branch's conflicting scopes hold only what a start wrote (unrelated: adopting is safe). */
  readonly localStartOnly: boolean;
  /** Unreachable: why. */
  readonly detail?: string;
}

/** What a fast-forward or a join committed (their actors' output). */
export interface SyncArrival {
  readonly revision: string;
  readonly remote: string;
  readonly scopes: readonly string[];
  /** Scopes chosen "reapply": how many of this machine's transitions became new ones, how many it already had. */
  readonly reapplied?: Readonly<Record<string, { readonly applied: number; readonly present: number }>>;
}

export interface JoinRequest {
  readonly finding: SyncFinding;
  readonly choices: Readonly<Record<string, Side>>;
}

export interface SyncContext {
  finding: SyncFinding | null;
  /** The person's side per conflicting scope (cleared when the lines move or the join they led to failed). */
  choices: Record<string, Side>;
  /** The last fast-forward or join (null: none in this actor). */
  arrival: SyncArrival | null;
  /** Why the last fetch, fast-forward or join failed (null: it did not). */
  error: string | null;
  /** Counts settled syncs: a caller waiting for one takes only a count newer than the one it saw. */
  seq: number;
  /** The sync at work was asked for by a person (/state-flow-sync): its answer is theirs, no notice besides. */
  asked: boolean;
  /** The conflict already told (its heads and scopes): the same finding again is not told again. */
  told: string | null;
}

export type SyncEvent =
  /** `asked`: a person asked for it (/state-flow-sync), so what it finds is their command's answer. */
  | { type: "SYNC"; asked?: boolean }
  /** The publication pushed this branch's head: the remote has it now (no fetch needed to know). */
  | { type: "PUSHED"; target: string }
  /** The person's side for one conflicting scope, or for every one (no scope). */
  | { type: "CHOOSE"; side: Side; scope?: string };

export type SyncEmitted =
  | { type: "sync.arrived"; arrival: SyncArrival; joined: boolean }
  /** A conflict (or unrelated lines) to tell the person: new, and found by a sync nobody asked for. */
  | { type: "sync.conflict" }
  | { type: "sync.settled"; finding: SyncFinding | null; error: string | null };

/** What the parent hears. */
export type SyncParentEvent =
  /** `head`: this branch's head as the fetch found it (what an `ahead` branch has to push). */
  { type: "SYNCED"; standing: Standing; head: string | null } | { type: "JOINED"; target: string };

type DoneEvent<T> = { type: `xstate.done.actor.${string}`; output: T };
const outputOf = <T>(event: { type: string }): T | undefined =>
  event.type.startsWith("xstate.done.actor.") ? (event as DoneEvent<T>).output : undefined;
const standingOf = (event: { type: string }) => outputOf<SyncFinding>(event)?.standing;
const errorOf = (event: { type: string }, fallback: string) => {
  const error = (event as { error?: unknown }).error;
  return error instanceof Error && error.message ? error.message : typeof error === "string" ? error : fallback;
};
const never = <T>() => new Promise<T>(() => {});

/** What a told conflict is known by: both heads and the scopes without a side (null: nothing to choose). */
export function conflictKey(context: Pick<SyncContext, "finding" | "choices">): string | null {
  const f = context.finding;
  const open = openConflicts(context).map((c) => c.scope);
  if (!f || (open.length === 0 && f.standing !== "unrelated")) return null;
  return `${f.standing} ${f.local}..${f.remoteHead}: ${open.join(", ")}`;
}

/** The conflicting scopes still without a side. */
export function openConflicts(context: Pick<SyncContext, "finding" | "choices">): SyncConflict[] {
  return (context.finding?.conflicts ?? []).filter((c) => !(c.scope in context.choices));
}

export const syncMachine = setup({
  types: {
    context: {} as SyncContext,
    events: {} as SyncEvent,
    emitted: {} as SyncEmitted,
  },
  actors: {
    fetch: fromPromise<SyncFinding>(never),
    fastForward: fromPromise<SyncArrival, SyncFinding>(never),
    join: fromPromise<SyncArrival, JoinRequest>(never),
  },
  guards: {
    foundBehind: ({ event }) => standingOf(event) === "behind",
    /** Diverged with no scope changed on both sides: the join needs no choice. */
    foundJoinable: ({ event }) => {
      const finding = outputOf<SyncFinding>(event);
      return finding?.standing === "diverged" && finding.conflicts.length === 0;
    },
    foundEqual: ({ event }) => standingOf(event) === "equal",
    foundAhead: ({ event }) => standingOf(event) === "ahead",
    foundDiverged: ({ event }) => standingOf(event) === "diverged",
    foundUnrelated: ({ event }) => standingOf(event) === "unrelated",
    foundUnreachable: ({ event }) => standingOf(event) === "unreachable",
    /** The choice leaves no conflicting scope without a side. */
    choiceSettlesAll: ({ context, event }) => {
      if (event.type !== "CHOOSE") return false;
      const open = openConflicts(context);
      return event.scope === undefined || open.every((c) => c.scope === event.scope);
    },
    /** The choice names a conflicting scope (or every one). */
    choiceNamesConflict: ({ context, event }) =>
      event.type === "CHOOSE" &&
      (event.scope === undefined || openConflicts(context).some((c) => c.scope === event.scope)),
  },
  actions: {
    /** A side chosen for a scope stands while the lines it was chosen for do (the same two heads). */
    keepFinding: assign({
      finding: ({ event }) => outputOf<SyncFinding>(event) ?? null,
      choices: ({ context, event }) => {
        const next = outputOf<SyncFinding>(event);
        const prev = context.finding;
        if (!next || !prev || next.local !== prev.local || next.remoteHead !== prev.remoteHead) return {};
        const scopes = new Set(next.conflicts.map((c) => c.scope));
        return Object.fromEntries(Object.entries(context.choices).filter(([scope]) => scopes.has(scope)));
      },
      error: () => null,
    }),
    noteFetchFailed: assign(({ context, event }) => {
      const detail = errorOf(event, "the remote could not be fetched");
      const remote = context.finding?.remote ?? null;
      const finding: SyncFinding = {
        standing: "unreachable",
        remote,
        local: null,
        remoteHead: null,
        fromRemote: [],
        conflicts: [],
        localStartOnly: false,
        detail,
      };
      return { finding, choices: {}, error: detail };
    }),
    /** The sides chosen led to a join that failed (a re-apply refused, a lock): the person chooses again. */
    noteFailed: assign({ error: ({ event }) => errorOf(event, "bringing the remote's line in failed"), choices: {} }),
    keepChoice: assign({
      choices: ({ context, event }) => {
        if (event.type !== "CHOOSE") return context.choices;
        const scopes = event.scope === undefined ? openConflicts(context).map((c) => c.scope) : [event.scope];
        return { ...context.choices, ...Object.fromEntries(scopes.map((scope) => [scope, event.side])) };
      },
    }),
    /** The pushed commit is the branch's and the remote's head now. */
    notePushed: assign({
      finding: ({ context, event }) =>
        event.type === "PUSHED" && context.finding && event.target !== ""
          ? { ...context.finding, standing: "equal" as const, local: event.target, remoteHead: event.target }
          : context.finding,
    }),
    keepArrival: assign(({ context, event }) => {
      const arrival = outputOf<SyncArrival>(event) ?? null;
      // A fast-forward leaves the branch at the remote's head: the finding says equal, at that commit.
      const fastForwarded = arrival !== null && (event as { type: string }).type === "xstate.done.actor.fastForward";
      const finding =
        fastForwarded && context.finding
          ? { ...context.finding, standing: "equal" as const, local: arrival.revision, remoteHead: arrival.revision }
          : context.finding;
      return { arrival, error: null, finding };
    }),
    announceArrival: emit(({ event }) => ({
      type: "sync.arrived" as const,
      arrival: outputOf<SyncArrival>(event)!,
      joined: (event as { type: string }).type === "xstate.done.actor.join",
    })),
    // The parent hears what it acts on; run alone (its own tests) the machine has no parent to tell.
    tellJoined: enqueueActions(({ event, self, enqueue }) => {
      const target = outputOf<SyncArrival>(event)?.revision ?? "";
      if ((self as { _parent?: unknown })._parent) enqueue.sendParent({ type: "JOINED", target });
    }),
    tellStanding: enqueueActions(({ context, self, enqueue }) => {
      const standing = context.finding?.standing ?? "unreachable";
      const head = context.finding?.local ?? null;
      if ((self as { _parent?: unknown })._parent) enqueue.sendParent({ type: "SYNCED", standing, head });
    }),
    settle: assign({ seq: ({ context }) => context.seq + 1 }),
    /** Who started this sync: a person's SYNC or CHOOSE, or the runtime's own. */
    noteAsker: assign({ asked: ({ event }) => event.type === "CHOOSE" || (event.type === "SYNC" && !!event.asked) }),
    /**
     * A conflict or unrelated lines with something to choose is told once per finding (its heads and open
     * scopes), and not by a notice when a person's command asked: the command's answer says it.
     */
    tellConflict: enqueueActions(({ context, enqueue }) => {
      const key = conflictKey(context);
      if (key === null || key === context.told) return;
      enqueue.assign({ told: key });
      if (!context.asked) enqueue.emit({ type: "sync.conflict" as const });
    }),
    announceSettled: emit(({ context }) => ({
      type: "sync.settled" as const,
      finding: context.finding,
      error: context.error,
    })),
  },
}).createMachine({
  id: "sync",
  context: { finding: null, choices: {}, arrival: null, error: null, seq: 0, asked: false, told: null },
  initial: "idle",
  states: {
    idle: {
      description: "Not fetched yet in this actor.",
      on: { SYNC: { target: "fetching", actions: ["noteAsker"] } },
    },
    fetching: {
      description:
        "Fetches the remote's branch into its tracking ref and classifies the branch against it (fetch). " +
        "Behind goes straight on to the fast-forward; diverged without a scope changed on both sides to the join.",
      invoke: {
        id: "fetch",
        src: "fetch",
        onDone: [
          { guard: "foundBehind", target: "fastForwarding", actions: ["keepFinding"] },
          { guard: "foundJoinable", target: "joining", actions: ["keepFinding"] },
          { guard: "foundEqual", target: "equal", actions: ["keepFinding"] },
          { guard: "foundAhead", target: "ahead", actions: ["keepFinding"] },
          { guard: "foundDiverged", target: "diverged", actions: ["keepFinding"] },
          { guard: "foundUnrelated", target: "unrelated", actions: ["keepFinding"] },
          { guard: "foundUnreachable", target: "unreachable", actions: ["keepFinding"] },
          { target: "idle", actions: ["keepFinding"] },
        ],
        onError: { target: "unreachable", actions: ["noteFetchFailed"] },
      },
    },
    fastForwarding: {
      description: "Behind: the branch moves to the fetched commit through the journaled publication (fastForward).",
      invoke: {
        id: "fastForward",
        src: "fastForward",
        input: ({ context }) => context.finding!,
        onDone: { target: "equal", actions: ["keepArrival", "announceArrival"] },
        onError: { target: "behind", actions: ["noteFailed"] },
      },
    },
    joining: {
      description:
        "Diverged: one two-parent commit takes each scope from the side that changed it, a conflicting scope " +
        "from the side chosen (join). The parent is told the commit to push.",
      invoke: {
        id: "join",
        src: "join",
        input: ({ context }) => ({ finding: context.finding!, choices: context.choices }),
        onDone: { target: "ahead", actions: ["keepArrival", "announceArrival", "tellJoined"] },
        onError: { target: "diverged", actions: ["noteFailed"] },
      },
    },
    equal: {
      description: "The branch is the remote's.",
      entry: ["settle", "tellStanding", "announceSettled"],
      on: { SYNC: { target: "fetching", actions: ["noteAsker"] } },
    },
    ahead: {
      description: "The remote lacks this branch's newest commits: the publication pushes them (PUSHED: equal).",
      entry: ["settle", "tellStanding", "announceSettled"],
      on: {
        SYNC: { target: "fetching", actions: ["noteAsker"] },
        PUSHED: { target: "equal", actions: ["notePushed"] },
      },
    },
    behind: {
      description: "Behind, and the fast-forward failed (its error is kept); the next sync tries again.",
      entry: ["settle", "tellStanding", "announceSettled"],
      on: { SYNC: { target: "fetching", actions: ["noteAsker"] } },
    },
    diverged: {
      description:
        "Both lines changed one scope: a named conflict, nothing merged, until the person chooses a side " +
        "for each such scope (CHOOSE); the publication waits.",
      entry: ["settle", "tellStanding", "announceSettled", "tellConflict"],
      on: {
        SYNC: { target: "fetching", actions: ["noteAsker"] },
        CHOOSE: [
          { guard: "choiceSettlesAll", target: "joining", actions: ["noteAsker", "keepChoice"] },
          { guard: "choiceNamesConflict", actions: ["noteAsker", "keepChoice"] },
        ],
      },
    },
    unrelated: {
      description:
        "The lines share no commit: named; a side is chosen per scope as for a divergence (adopting the " +
        "remote is offered when this branch holds only its start). Never a force-push.",
      entry: ["settle", "tellStanding", "announceSettled", "tellConflict"],
      on: {
        SYNC: { target: "fetching", actions: ["noteAsker"] },
        CHOOSE: [
          { guard: "choiceSettlesAll", target: "joining", actions: ["noteAsker", "keepChoice"] },
          { guard: "choiceNamesConflict", actions: ["noteAsker", "keepChoice"] },
        ],
      },
    },
    unreachable: {
      description: "The remote could not be fetched (its cause is kept); the next sync tries again.",
      entry: ["settle", "tellStanding", "announceSettled"],
      on: { SYNC: { target: "fetching", actions: ["noteAsker"] } },
    },
  },
});

export type SyncSnapshot = SnapshotFrom<typeof syncMachine>;

/** Whether a sync is at work (fetching, fast-forwarding or joining). */
export function isSyncing(s: SyncSnapshot): boolean {
  return s.matches("fetching") || s.matches("fastForwarding") || s.matches("joining");
}
