// Publication machine: remote replication of locally accepted cohorts (spec 001 "Runtime
// ownership and Git publication"), one actor per store generation. A local commit accepts the
// transition; this machine decides what to push and when, and carries the effects out as invoked
// actors whose implementations the runtime provides (`machine.provide({ actors })`):
// - `readRecord` (state `recovering`): restart recovery reads the session's durable pending record;
// - `remoteHas` (state `remote.checking`): whether the remote already has the recovered pending
//   target, asked in the background (activation never waits on the network);
// - `push` (state `remote.pushing`, input `{target, generation}`): one push of an existing commit;
// - `sync` (invoked for as long as the route is `remote`): the sync machine (machines/sync.ts), which
//   fetches, classifies, fast-forwards and joins. SYNC and CHOOSE are forwarded to it; it answers
//   SYNCED{standing} and JOINED{target}. A push the remote rejects because it holds commits this
//   branch lacks waits (`remote.waiting`) for that answer instead of being retried after every run.
// Each result is the invoked actor's done or error event, a drawn transition. Leaving the state
// stops its actor (its signal aborts), so a result after shutdown, a lineage reset or a newer
// target never arrives. Every change of the pending publication is announced as an emitted
// `publication.record{record}` (the durable record to write). Pure: imports only xstate.
import { assign, enqueueActions, fromPromise, sendTo, setup } from "xstate";
import { syncMachine, type Side, type SyncParentEvent } from "./sync.ts";

export type PublicationPolicy = "off" | "turn-end" | "transition";
export type StorageBackend = "git" | "file";

/** The pending publication: the existing accepted commit still to push. */
export interface PendingPublication {
  /** The existing accepted commit to push. */
  readonly revision: string;
  /** Failed attempts so far (0 = not yet attempted). */
  readonly attempts: number;
  readonly lastError?: string;
}

/** The session's durable record (same fields and values as storage's PendingRecord: older stores load). */
export type PublicationRecord =
  | { readonly state: "pending"; readonly revision: string; readonly attempts: number; readonly lastError?: string }
  | { readonly state: "settled"; readonly revision: string };

/** What the `push` actor is started with: the in-flight target under the current generation. */
export interface PushRequest {
  readonly target: string;
  readonly generation: number;
}

/**
 * What a push that ran reports (`push`'s output). A failed push is the actor's error instead
 * (`onError`), whose message becomes the pending target's `lastError`.
 */
export type PushOutput =
  | { readonly kind: "pushed"; readonly remote?: string }
  /** No remote configured any more (removed since the route was chosen): local-only from now on. */
  | { readonly kind: "local-only" }
  /** The target no longer exists locally (history reset). */
  | { readonly kind: "unreachable"; readonly detail?: string }
  /** The remote holds commits this branch lacks (another machine published): a sync must come first. */
  | { readonly kind: "rejected"; readonly detail?: string };

/** What the remote answered about a recovered target (`remoteHas`'s output); could not ask = error. */
export interface RemoteHasOutput {
  readonly has: boolean;
}

export interface PublicationInput {
  policy: PublicationPolicy;
  backend: StorageBackend;
  /** Whether the state repository has a remote configured (operator-owned). */
  remote: boolean;
  /** Fencing generation this actor starts with (e.g. from a process-wide counter). */
  generation?: number;
  /** Restart recovery: the revision the branch selected; the session's record is read first (`recovering`). */
  selected?: string | null;
  /** Restart recovery when the caller already knows the pending publication (no record to read). */
  restored?: PendingPublication | null;
  /** Ask the remote (`remoteHas`) whether it already has a recovered pending target before pushing it. */
  ask?: boolean;
}

/** The last push result, kept so a caller waiting for its target reads the outcome from a snapshot. */
export interface PushResult {
  /** Counts results in this actor: a caller takes only a result newer than the one it saw when it began. */
  readonly seq: number;
  readonly target: string;
  readonly kind: "pushed" | "failed" | "local-only" | "unreachable" | "rejected";
  readonly remote?: string;
  readonly error?: string;
}

export interface PublicationContext {
  policy: PublicationPolicy;
  backend: StorageBackend;
  remote: boolean;
  generation: number;
  /** The revision whose record restart recovery still has to read (null once read, or none to read). */
  selected: string | null;
  ask: boolean;
  /** Newest accepted target waiting to be pushed. */
  queued: string | null;
  /** Target of the push in flight. */
  inflight: string | null;
  /** Accepted target whose push failed or was never confirmed (survives restart through the record). */
  pending: string | null;
  /** Failed pushes of the pending target (0 when nothing is pending or it was never attempted). */
  attempts: number;
  /** Error of the pending target's last failed push. */
  lastError: string | null;
  /** What the session's durable record says (as read at recovery, then as last announced). */
  record: PublicationRecord | null;
  lastResult: PushResult | null;
}

export type PublicationEvent =
  | { type: "ACCEPTED"; target: string }
  /** A Pi run ended (the `"turn-end"` policy pushes then). */
  | { type: "RUN_END" }
  | { type: "RETRY" }
  /** A publication remote is configured now (the user added one since the route was chosen). */
  | { type: "REMOTE_FOUND" }
  /** Fetch and classify now (start, restore, /state-flow-sync): forwarded to the sync machine. */
  | { type: "SYNC"; asked?: boolean }
  /** The person's side for a conflicting scope (or every one): forwarded to the sync machine. */
  | { type: "CHOOSE"; side: Side; scope?: string }
  | SyncParentEvent
  | { type: "SHUTDOWN" };

export type RecordAnnounced = { type: "publication.record"; record: PublicationRecord };

/** The pending publication: the newest accepted target not yet confirmed, or null. */
export function pendingOf(context: PublicationContext): PendingPublication | null {
  const revision = context.queued ?? context.inflight ?? context.pending;
  if (revision === null) return null;
  if (revision !== context.pending) return { revision, attempts: 0 };
  return {
    revision,
    attempts: context.attempts,
    ...(context.lastError === null ? {} : { lastError: context.lastError }),
  };
}

/** What the durable record should say: the pending publication, else the last revision it named, settled. */
export function recordOf(context: PublicationContext): PublicationRecord | null {
  const pending = pendingOf(context);
  if (pending) return { state: "pending", ...pending };
  return context.record === null ? null : { state: "settled", revision: context.record.revision };
}

function sameRecord(a: PublicationRecord | null, b: PublicationRecord | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.state !== b.state || a.revision !== b.revision) return false;
  if (a.state === "settled" || b.state === "settled") return true;
  return a.attempts === b.attempts && a.lastError === b.lastError;
}

/** Why a rejected push waits (git's words kept after it). */
function rejectedText(detail: string | undefined): string {
  const why = "the remote holds commits this machine lacks (another machine published)";
  return detail ? `${why}: ${detail}` : why;
}

function errorText(error: unknown, fallback: string): string {
  if (error instanceof Error) return error.message || fallback;
  return typeof error === "string" && error !== "" ? error : fallback;
}

type DoneEvent<T> = { type: `xstate.done.actor.${string}`; output: T };
const outputOf = <T>(event: { type: string }): T | undefined =>
  event.type.startsWith("xstate.done.actor.") ? (event as DoneEvent<T>).output : undefined;
const pushKind = (event: { type: string }) => outputOf<PushOutput>(event)?.kind;

/** Placeholders: the runtime provides the real actors; unprovided, they never settle. */
const never = <T>() => new Promise<T>(() => {});

export const publicationMachine = setup({
  types: {
    context: {} as PublicationContext,
    events: {} as PublicationEvent,
    emitted: {} as RecordAnnounced,
    input: {} as PublicationInput,
  },
  actors: {
    readRecord: fromPromise<PublicationRecord | null, { selected: string }>(never),
    remoteHas: fromPromise<RemoteHasOutput, PushRequest>(never),
    push: fromPromise<PushOutput, PushRequest>(never),
    sync: syncMachine,
  },
  guards: {
    recovers: ({ context }) => context.selected !== null,
    isFileOnly: ({ context }) => context.backend === "file",
    hasNoRemote: ({ context }) => !context.remote,
    isPolicyOff: ({ context }) => context.policy === "off",
    isTransitionPolicy: ({ context }) => context.policy === "transition",
    hasQueuedUnderTransitionPolicy: ({ context }) => context.queued !== null && context.policy === "transition",
    hasQueued: ({ context }) => context.queued !== null,
    hasPending: ({ context }) => context.pending !== null,
    asksAboutPending: ({ context }) => context.pending !== null && context.ask,
    /** The record names the selected revision settled: a previous runtime left nothing pending. */
    recordSettlesSelected: ({ context, event }) => {
      const record = outputOf<PublicationRecord | null>(event);
      return record?.state === "settled" && record.revision === context.selected;
    },
    remoteHasIt: ({ event }) => outputOf<RemoteHasOutput>(event)?.has === true,
    isPushed: ({ event }) => pushKind(event) === "pushed",
    pushFoundNoRemote: ({ event }) => pushKind(event) === "local-only",
    isUnreachable: ({ event }) => pushKind(event) === "unreachable",
    isRejected: ({ event }) => pushKind(event) === "rejected",
    /** The sync found the remote lacking this branch's commits: the held target can be pushed now. */
    syncFoundAhead: ({ context, event }) =>
      event.type === "SYNCED" && event.standing === "ahead" && context.pending !== null,
    /** The sync found the remote lacking this branch's head while nothing is held (e.g. a remote added later). */
    syncFoundUnpushedHead: ({ context, event }) =>
      event.type === "SYNCED" &&
      event.standing === "ahead" &&
      event.head !== null &&
      context.queued === null &&
      context.inflight === null &&
      context.pending === null,
    /** The sync found the branch equal to the remote's: the held target is there (published another way). */
    syncFoundEqual: ({ event }) => event.type === "SYNCED" && event.standing === "equal",
    /** The target is unreachable while a newer accepted target is queued behind the push. */
    isUnreachableWithQueued: ({ context, event }) => pushKind(event) === "unreachable" && context.queued !== null,
    recordChanged: ({ context }) => !sameRecord(recordOf(context), context.record),
  },
  actions: {
    // Newest only. A target accepted while its own push is in flight is covered by that push: it
    // supersedes any older queued target and is not queued behind itself (a second push of the same
    // commit would be redundant and would reset its failure count).
    queueNewest: assign({
      queued: ({ context, event }) =>
        event.type !== "ACCEPTED" || event.target === context.inflight ? null : event.target,
    }),
    // The push starts: the in-flight target is assigned here and `remote.pushing` invokes `push` with it.
    startPushNewest: assign(({ event }) =>
      event.type === "ACCEPTED"
        ? { inflight: event.target, queued: null, pending: null, attempts: 0, lastError: null }
        : {},
    ),
    startPushQueued: assign(({ context }) =>
      context.queued === null
        ? {}
        : { inflight: context.queued, queued: null, pending: null, attempts: 0, lastError: null },
    ),
    startPushPending: assign({ inflight: ({ context }) => context.pending }),
    /** Keeps the result for its target's callers (before the target is confirmed, failed or dropped). */
    keepResult: assign({
      lastResult: ({ context, event }) => {
        const seq = (context.lastResult?.seq ?? 0) + 1;
        const target = context.inflight ?? "";
        if (event.type.startsWith("xstate.error.actor."))
          return { seq, target, kind: "failed", error: errorText((event as { error?: unknown }).error, "push failed") };
        const output = outputOf<PushOutput>(event);
        if (output?.kind === "pushed")
          return { seq, target, kind: "pushed", ...(output.remote ? { remote: output.remote } : {}) };
        if (output?.kind === "unreachable")
          return { seq, target, kind: "unreachable", error: output.detail || "commit not found" };
        if (output?.kind === "rejected") return { seq, target, kind: "rejected", error: rejectedText(output.detail) };
        return { seq, target, kind: "local-only" };
      },
    }),
    confirmInflight: assign({ inflight: null, pending: null, attempts: 0, lastError: null }),
    failInflight: assign({
      pending: ({ context }) => context.inflight,
      inflight: () => null,
      attempts: ({ context }) =>
        context.pending !== null && context.pending === context.inflight ? context.attempts + 1 : 1,
      lastError: ({ event }) => errorText((event as { error?: unknown }).error, "push failed"),
    }),
    /** The in-flight target is unreachable and a newer queued target supersedes it: drop it, never retry it. */
    dropInflight: assign({ inflight: null, pending: null, attempts: 0, lastError: null }),
    markRemote: assign({ remote: () => true }),
    /** The remote rejected the push: the newest target is held (pending) until a sync lets it land. */
    holdRejected: assign(({ context, event }) => {
      const output = outputOf<PushOutput>(event);
      return {
        pending: context.queued ?? context.inflight,
        queued: null,
        inflight: null,
        attempts: 0,
        lastError: rejectedText(output?.kind === "rejected" ? output.detail : undefined),
      };
    }),
    /** A newer accepted target while held: it replaces the held one (it contains it), still unpushed. */
    holdNewest: assign({
      pending: ({ context, event }) => (event.type === "ACCEPTED" ? event.target : context.pending),
    }),
    /** The sync joined the lines: its commit (which contains every held target) is pushed. */
    startPushJoined: assign(({ event }) =>
      event.type === "JOINED"
        ? { inflight: event.target, queued: null, pending: null, attempts: 0, lastError: null }
        : {},
    ),
    /** Pushes the branch head the sync found unpublished (commits accepted before a remote, or by ended sessions). */
    startPushHead: assign(({ event }) =>
      event.type === "SYNCED" && event.head !== null
        ? { inflight: event.head, queued: null, pending: null, attempts: 0, lastError: null }
        : {},
    ),
    askSync: sendTo("sync", { type: "SYNC" }),
    tellSyncPushed: sendTo("sync", ({ context }) => ({
      type: "PUSHED" as const,
      target: context.lastResult?.target ?? "",
    })),
    forwardToSync: sendTo("sync", ({ event }) => event),
    /** A route that publishes nothing drops a recovered pending target (the record then says settled). */
    dropPending: assign({ pending: null, attempts: 0, lastError: null }),
    /** The record names the selected revision settled: nothing pending. */
    recoverSettled: assign({
      selected: () => null,
      record: ({ event }) => outputOf<PublicationRecord | null>(event) ?? null,
    }),
    /**
     * Pending after a restart: the revision the record names pending; with no record (an older
     * version wrote the session, or it ended between a commit and the record) or an unreadable one,
     * the selected revision. The record is taken to say so already (it is not rewritten for that).
     */
    recoverPending: assign(({ context, event }) => {
      const record = outputOf<PublicationRecord | null>(event);
      const pending: PendingPublication =
        record?.state === "pending"
          ? {
              revision: record.revision,
              attempts: record.attempts,
              ...(record.lastError ? { lastError: record.lastError } : {}),
            }
          : { revision: context.selected ?? "", attempts: 0 };
      return {
        selected: null,
        pending: pending.revision,
        attempts: pending.attempts,
        lastError: pending.lastError ?? null,
        record: { state: "pending" as const, ...pending },
      };
    }),
    settlePending: assign({ pending: null, attempts: 0, lastError: null }),
    /** The cause of the unanswered question becomes the pending target's error (no push was attempted). */
    noteUnanswered: assign({
      lastError: ({ event }) => errorText((event as { error?: unknown }).error, "the remote could not be asked"),
    }),
    fenceGeneration: assign({
      generation: ({ context }) => context.generation + 1,
      queued: () => null,
      inflight: () => null,
      pending: () => null,
      attempts: () => 0,
      lastError: () => null,
    }),
    /** The pending publication changed: the durable record is announced (the runtime writes it, in order). */
    recordPending: enqueueActions(({ context, enqueue }) => {
      const record = recordOf(context);
      if (record === null) return;
      enqueue.assign({ record });
      enqueue.emit({ type: "publication.record", record });
    }),
  },
}).createMachine({
  id: "publication",
  context: ({ input }) => ({
    policy: input.policy,
    backend: input.backend,
    remote: input.remote,
    generation: input.generation ?? 0,
    selected: input.restored ? null : (input.selected ?? null),
    ask: input.ask ?? false,
    queued: null,
    inflight: null,
    pending: input.restored?.revision ?? null,
    attempts: input.restored?.attempts ?? 0,
    lastError: input.restored?.lastError ?? null,
    record: input.restored ? { state: "pending", ...input.restored } : null,
    lastResult: null,
  }),
  initial: "route",
  on: {
    SHUTDOWN: { target: ".closed", actions: ["fenceGeneration"] },
  },
  // After every step in every open state: a changed pending publication is recorded.
  always: { guard: "recordChanged", actions: ["recordPending"] },
  states: {
    route: {
      description:
        "Transient: recovers first after a restart, then chooses the route from backend, remote and policy " +
        "(a recovered pending target is asked about, or pending, on the remote route; dropped on any other).",
      always: [
        { guard: "recovers", target: "recovering" },
        { guard: "isFileOnly", target: "fileOnly", actions: ["dropPending"] },
        { guard: "hasNoRemote", target: "localOnly", actions: ["dropPending"] },
        { guard: "isPolicyOff", target: "off", actions: ["dropPending"] },
        { guard: "asksAboutPending", target: "remote.checking" },
        { guard: "hasPending", target: "remote.pending" },
        { target: "remote" },
      ],
    },
    recovering: {
      description:
        "Restart recovery: reads the session's durable pending record (readRecord) to learn what a " +
        "previous runtime left unpublished; an unreadable record counts as none.",
      invoke: {
        id: "readRecord",
        src: "readRecord",
        input: ({ context }) => ({ selected: context.selected ?? "" }),
        onDone: [
          { guard: "recordSettlesSelected", target: "route", actions: ["recoverSettled"] },
          { target: "route", actions: ["recoverPending"] },
        ],
        onError: { target: "route", actions: ["recoverPending"] },
      },
    },
    fileOnly: { description: "Git absent: persistence is file-only; nothing to publish, no fake pushes." },
    localOnly: {
      description:
        "Git without a remote (at start, or a push found none): intentionally local, not a pending error. " +
        "A remote added later takes effect at the next accepted cohort.",
      on: { REMOTE_FOUND: { target: "route", actions: ["markRemote"] } },
    },
    off: { description: "Policy off: commits stay local." },
    remote: {
      description:
        "Git with a remote under turn-end or transition policy. The sync machine runs beside the pushes " +
        "(invoked here): SYNC and CHOOSE are forwarded to it.",
      invoke: { id: "sync", src: "sync" },
      on: {
        SYNC: { actions: ["forwardToSync"] },
        CHOOSE: { actions: ["forwardToSync"] },
      },
      initial: "idle",
      states: {
        idle: {
          description: "Nothing accepted yet in this actor (or the lineage was reset); a run's end fetches.",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
            RUN_END: { actions: ["askSync"] },
            JOINED: { target: "pushing", actions: ["startPushJoined"] },
            SYNCED: { guard: "syncFoundUnpushedHead", target: "pushing", actions: ["startPushHead"] },
          },
        },
        checking: {
          description:
            "Restart recovery, on the remote route: asks the remote (remoteHas, in the background) whether it " +
            "already has the recovered pending target. A newer accepted target replaces it (the question stops).",
          invoke: {
            id: "remoteHas",
            src: "remoteHas",
            input: ({ context }) => ({ target: context.pending ?? "", generation: context.generation }),
            onDone: [
              { guard: "remoteHasIt", target: "confirmed", actions: ["settlePending"] },
              { target: "pushing", actions: ["startPushPending"] },
            ],
            onError: { target: "pending", actions: ["noteUnanswered"] },
          },
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
          },
        },
        queued: {
          description: "The newest accepted target waits for the run's end.",
          on: {
            ACCEPTED: { actions: ["queueNewest"] },
            RUN_END: { target: "pushing", actions: ["startPushQueued"] },
          },
        },
        pushing: {
          description: "One push in flight (the invoked push actor); newer targets queue behind it.",
          invoke: {
            id: "push",
            src: "push",
            input: ({ context }) => ({ target: context.inflight ?? "", generation: context.generation }),
            onDone: [
              { guard: "isPushed", target: "settling", actions: ["keepResult", "confirmInflight", "tellSyncPushed"] },
              {
                guard: "pushFoundNoRemote",
                target: "#publication.localOnly",
                actions: ["keepResult", "fenceGeneration"],
              },
              { guard: "isUnreachableWithQueued", target: "settling", actions: ["keepResult", "dropInflight"] },
              { guard: "isUnreachable", target: "idle", actions: ["keepResult", "fenceGeneration"] },
              { guard: "isRejected", target: "waiting", actions: ["keepResult", "holdRejected", "askSync"] },
            ],
            onError: { target: "settling", actions: ["keepResult", "failInflight"] },
          },
          initial: "inFlight",
          on: { ACCEPTED: { actions: ["queueNewest"] } },
          states: {
            inFlight: {
              description: "The push runs; a run end with a newer target queued is remembered as runEnded.",
              on: { RUN_END: { guard: "hasQueued", target: "runEnded" } },
            },
            runEnded: {
              description:
                "A run ended after a newer target was queued: the current result starts its push at once " +
                "(the push actor is invoked anew).",
              on: {
                ACCEPTED: { target: "inFlight", actions: ["queueNewest"] },
                "xstate.done.actor.push": [
                  {
                    guard: "isPushed",
                    target: "#publication.remote.pushing",
                    reenter: true,
                    actions: ["keepResult", "confirmInflight", "tellSyncPushed", "startPushQueued"],
                  },
                  {
                    guard: "isUnreachable",
                    target: "#publication.remote.pushing",
                    reenter: true,
                    actions: ["keepResult", "dropInflight", "startPushQueued"],
                  },
                  {
                    guard: "isRejected",
                    target: "#publication.remote.waiting",
                    actions: ["keepResult", "holdRejected", "askSync"],
                  },
                ],
                "xstate.error.actor.push": {
                  target: "#publication.remote.pushing",
                  reenter: true,
                  actions: ["keepResult", "failInflight", "startPushQueued"],
                },
              },
            },
          },
        },
        settling: {
          description: "A result arrived: decide what comes next.",
          always: [
            { guard: "hasQueuedUnderTransitionPolicy", target: "pushing", actions: ["startPushQueued"] },
            { guard: "hasQueued", target: "queued" },
            { guard: "hasPending", target: "pending" },
            { target: "confirmed" },
          ],
        },
        confirmed: {
          description: "The newest accepted target is confirmed on the remote; a run's end fetches.",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
            RUN_END: { actions: ["askSync"] },
            JOINED: { target: "pushing", actions: ["startPushJoined"] },
            SYNCED: { guard: "syncFoundUnpushedHead", target: "pushing", actions: ["startPushHead"] },
          },
        },
        waiting: {
          description:
            "The remote rejected the push: it holds commits this branch lacks (another machine published). " +
            "The newest target is held, not re-pushed after every run, until the sync joins the lines " +
            "(JOINED: its commit is pushed) or finds the remote lacking them (SYNCED ahead); RETRY pushes anyway.",
          on: {
            ACCEPTED: { actions: ["holdNewest"] },
            JOINED: { target: "pushing", actions: ["startPushJoined"] },
            SYNCED: [
              { guard: "syncFoundAhead", target: "pushing", actions: ["startPushPending"] },
              { guard: "syncFoundEqual", target: "confirmed", actions: ["settlePending"] },
            ],
            RETRY: { target: "pushing", actions: ["startPushPending"] },
          },
        },
        pending: {
          description: "Pending publication: retried at a run's end or on RETRY; survives restart (the record).",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
            RUN_END: { target: "pushing", actions: ["startPushPending"] },
            RETRY: { target: "pushing", actions: ["startPushPending"] },
          },
        },
      },
    },
    closed: { type: "final", description: "Shut down: the generation is fenced; running actors are stopped." },
  },
});
