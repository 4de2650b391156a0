// Publication machine: remote replication of locally accepted cohorts (spec 001 "Runtime
// ownership and Git publication"). A local commit accepts the transition; this machine only
// decides what to push and when. Pure: every push it starts is announced as an emitted
// `publication.push{target, generation}` (the driver runs exactly those), and the driver reports
// each result 1:1 as an event tagged with the target and the generation it was started under.
// Likewise for the one question it asks the remote: whether it already has an intent restored
// after a restart. The question is asked in the background (activation never waits on the
// network), announced as `publication.ask{target, generation}`, and its answer comes back as an
// event fenced the same way.
import { setup, assign, emit, enqueueActions, type SnapshotFrom } from "xstate";

export type PublicationPolicy = "off" | "turn-end" | "transition";
export type StorageBackend = "git" | "file";

export interface PublicationInput {
  policy: PublicationPolicy;
  backend: StorageBackend;
  /** Whether the state repository has a remote configured (operator-owned). */
  remote: boolean;
  /** Fencing generation this runtime starts with (e.g. from a process-wide counter). */
  generation?: number;
}

export interface PublicationContext {
  policy: PublicationPolicy;
  backend: StorageBackend;
  remote: boolean;
  generation: number;
  /** Newest accepted target waiting to be pushed. */
  queued: string | null;
  /** Target of the push in flight. */
  inflight: string | null;
  /** Accepted target whose push failed or is unconfirmed (survives restart). */
  pending: string | null;
  /** Failed pushes of the pending target (0 when nothing is pending or it was never attempted). */
  attempts: number;
  /** Error of the pending target's last failed push. */
  lastError: string | null;
}

export type PublicationEvent =
  | { type: "ACCEPTED"; target: string }
  | { type: "TURN_END" }
  | { type: "RETRY" }
  | { type: "PUSH_OK"; target: string; generation: number }
  | { type: "PUSH_FAILED"; target: string; generation: number; error?: string }
  /** The push found no remote configured (removed since the route was chosen): local-only from now on. */
  | { type: "PUSH_LOCAL_ONLY"; target: string; generation: number }
  /**
   * The pushed target no longer exists locally (history reset). The machine decides: a newer
   * queued target supersedes it, otherwise the lineage was reset (generation fenced, targets dropped).
   */
  | { type: "PUSH_UNREACHABLE"; target: string; generation: number; error?: string }
  /**
   * The intent a previous runtime left (restart). With `ask`, the remote is first asked whether it
   * already has the target (`checking`); without, the target is pending at once.
   */
  | { type: "RESTORED_PENDING"; target: string; attempts?: number; error?: string; ask?: boolean }
  /** The remote already has the asked target: settled, nothing to push. */
  | { type: "REMOTE_HAS"; target: string; generation: number }
  /** The remote lacks the asked target: it is pushed. */
  | { type: "REMOTE_LACKS"; target: string; generation: number }
  /** The remote could not be asked (unreachable, no answer within the limit): pending, with that cause. */
  | { type: "REMOTE_UNANSWERED"; target: string; generation: number; error: string }
  /** A publication remote is configured now (the user added one since the route was chosen). */
  | { type: "REMOTE_FOUND" }
  | { type: "SHUTDOWN" };

/**
 * Effects the machine announces: the driver runs each push it is told to, and no other; a result
 * the machine did not count (stale target or generation) is announced so the driver tells its
 * callers that target was superseded without judging the result itself.
 */
export type PushAnnounced = { type: "publication.push"; target: string; generation: number };
export type AskAnnounced = { type: "publication.ask"; target: string; generation: number };
export type PublicationEmitted = PushAnnounced | AskAnnounced | { type: "publication.stale"; target: string };

export type RemoteAnswerEvent = Extract<
  PublicationEvent,
  { type: "REMOTE_HAS" | "REMOTE_LACKS" | "REMOTE_UNANSWERED" }
>;

export function isRemoteAnswer(event: PublicationEvent): event is RemoteAnswerEvent {
  return event.type === "REMOTE_HAS" || event.type === "REMOTE_LACKS" || event.type === "REMOTE_UNANSWERED";
}

/** An answer counts only for the target being asked about under the current generation. */
export function isCurrentAnswer(context: PublicationContext, event: PublicationEvent): boolean {
  return (
    isRemoteAnswer(event) &&
    context.pending !== null &&
    event.target === context.pending &&
    event.generation === context.generation
  );
}

export type PushResultEvent = Extract<
  PublicationEvent,
  { type: "PUSH_OK" | "PUSH_FAILED" | "PUSH_LOCAL_ONLY" | "PUSH_UNREACHABLE" }
>;

export function isPushResult(event: PublicationEvent): event is PushResultEvent {
  return (
    event.type === "PUSH_OK" ||
    event.type === "PUSH_FAILED" ||
    event.type === "PUSH_LOCAL_ONLY" ||
    event.type === "PUSH_UNREACHABLE"
  );
}

/** A push result counts only for the target in flight under the current generation. */
export function isCurrentResult(context: PublicationContext, event: PublicationEvent): boolean {
  return (
    isPushResult(event) &&
    context.inflight !== null &&
    event.target === context.inflight &&
    event.generation === context.generation
  );
}

export const publicationMachine = setup({
  types: {
    context: {} as PublicationContext,
    events: {} as PublicationEvent,
    emitted: {} as PublicationEmitted,
    input: {} as PublicationInput,
  },
  guards: {
    isFileOnly: ({ context }) => context.backend === "file",
    hasNoRemote: ({ context }) => !context.remote,
    isPolicyOff: ({ context }) => context.policy === "off",
    isTransitionPolicy: ({ context }) => context.policy === "transition",
    isCurrentResult: ({ context, event }) => isCurrentResult(context, event),
    /** A current result while a newer accepted target is queued behind the push. */
    isCurrentResultWithQueued: ({ context, event }) => isCurrentResult(context, event) && context.queued !== null,
    hasQueuedUnderTransitionPolicy: ({ context }) => context.queued !== null && context.policy === "transition",
    hasQueued: ({ context }) => context.queued !== null,
    hasPending: ({ context }) => context.pending !== null,
    asksRemote: ({ event }) => event.type === "RESTORED_PENDING" && event.ask === true,
    isCurrentAnswer: ({ context, event }) => isCurrentAnswer(context, event),
  },
  actions: {
    // Newest only. A target accepted while its own push is in flight is covered by that push: it
    // supersedes any older queued target and is not queued behind itself (a second push of the same
    // commit would be redundant and would reset its failure count).
    queueNewest: assign({
      queued: ({ context, event }) =>
        event.type !== "ACCEPTED" || event.target === context.inflight ? null : event.target,
    }),
    // Every push start assigns the in-flight target AND announces it: no transition can start a
    // push the driver does not hear of, and a restart of the same target is a second announcement.
    startPushNewest: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "ACCEPTED") return;
      enqueue.assign({ inflight: event.target, queued: null, pending: null, attempts: 0, lastError: null });
      enqueue.emit({ type: "publication.push", target: event.target, generation: context.generation });
    }),
    startPushQueued: enqueueActions(({ context, enqueue }) => {
      if (context.queued === null) return;
      enqueue.assign({ inflight: context.queued, queued: null, pending: null, attempts: 0, lastError: null });
      enqueue.emit({ type: "publication.push", target: context.queued, generation: context.generation });
    }),
    startPushPending: enqueueActions(({ context, enqueue }) => {
      if (context.pending === null) return;
      enqueue.assign({ inflight: context.pending });
      enqueue.emit({ type: "publication.push", target: context.pending, generation: context.generation });
    }),
    confirmInflight: assign({ inflight: null, pending: null, attempts: 0, lastError: null }),
    failInflight: assign({
      pending: ({ context }) => context.inflight,
      inflight: () => null,
      attempts: ({ context }) =>
        context.pending !== null && context.pending === context.inflight ? context.attempts + 1 : 1,
      lastError: ({ event }) => (event.type === "PUSH_FAILED" ? (event.error ?? "push failed") : "push failed"),
    }),
    /** The in-flight target is unreachable and a newer queued target supersedes it: drop it, never retry it. */
    dropInflight: assign({ inflight: null, pending: null, attempts: 0, lastError: null }),
    markRemote: assign({ remote: () => true }),
    restorePending: assign({
      pending: ({ event }) => (event.type === "RESTORED_PENDING" ? event.target : null),
      attempts: ({ event }) => (event.type === "RESTORED_PENDING" ? (event.attempts ?? 0) : 0),
      lastError: ({ event }) => (event.type === "RESTORED_PENDING" ? (event.error ?? null) : null),
    }),
    // The question runs in the background; only its answer (an event) moves the machine on.
    askRemote: enqueueActions(({ context, enqueue }) => {
      if (context.pending === null) return;
      enqueue.emit({ type: "publication.ask", target: context.pending, generation: context.generation });
    }),
    settlePending: assign({ pending: null, attempts: 0, lastError: null }),
    /** The cause of the unanswered question becomes the pending target's error (no push was attempted). */
    noteUnanswered: assign({
      lastError: ({ event }) => (event.type === "REMOTE_UNANSWERED" ? event.error : "the remote could not be asked"),
    }),
    ignoreStaleResult: emit(
      ({ event }) => ({ type: "publication.stale", target: isPushResult(event) ? event.target : "" }) as const,
    ),
    fenceGeneration: assign({
      generation: ({ context }) => context.generation + 1,
      queued: () => null,
      inflight: () => null,
      pending: () => null,
      attempts: () => 0,
      lastError: () => null,
    }),
  },
}).createMachine({
  id: "publication",
  context: ({ input }) => ({
    policy: input.policy,
    backend: input.backend,
    remote: input.remote,
    generation: input.generation ?? 0,
    queued: null,
    inflight: null,
    pending: null,
    attempts: 0,
    lastError: null,
  }),
  initial: "route",
  on: {
    SHUTDOWN: { target: ".closed", actions: ["fenceGeneration"] },
    // A result no state counts (nothing of that target is in flight here) is announced as stale.
    PUSH_OK: { actions: ["ignoreStaleResult"] },
    PUSH_FAILED: { actions: ["ignoreStaleResult"] },
    PUSH_LOCAL_ONLY: { actions: ["ignoreStaleResult"] },
    PUSH_UNREACHABLE: { actions: ["ignoreStaleResult"] },
  },
  states: {
    route: {
      description: "Chooses the publication route from backend, remote and policy.",
      always: [
        { guard: "isFileOnly", target: "fileOnly" },
        { guard: "hasNoRemote", target: "localOnly" },
        { guard: "isPolicyOff", target: "off" },
        { target: "remote" },
      ],
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
      description: "Git with a remote under turn-end or transition policy.",
      initial: "idle",
      states: {
        idle: {
          description: "Nothing accepted yet in this runtime (or the lineage was reset).",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
            RESTORED_PENDING: [
              { guard: "asksRemote", target: "checking", actions: ["restorePending", "askRemote"] },
              { target: "pending", actions: ["restorePending"] },
            ],
          },
        },
        checking: {
          description:
            "A restored target waits for the remote's answer (asked in the background): has it already? " +
            "A newer accepted target replaces it; a late answer then counts for nothing.",
          on: {
            REMOTE_HAS: { guard: "isCurrentAnswer", target: "confirmed", actions: ["settlePending"] },
            REMOTE_LACKS: { guard: "isCurrentAnswer", target: "pushing", actions: ["startPushPending"] },
            REMOTE_UNANSWERED: { guard: "isCurrentAnswer", target: "pending", actions: ["noteUnanswered"] },
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
          },
        },
        queued: {
          description: "The newest accepted target waits for turn_end.",
          on: {
            ACCEPTED: { actions: ["queueNewest"] },
            TURN_END: { target: "pushing", actions: ["startPushQueued"] },
          },
        },
        pushing: {
          description: "One asynchronous push in flight; newer targets queue behind it.",
          initial: "inFlight",
          on: {
            ACCEPTED: { actions: ["queueNewest"] },
            PUSH_OK: [
              { guard: "isCurrentResult", target: "settling", actions: ["confirmInflight"] },
              { actions: ["ignoreStaleResult"] },
            ],
            PUSH_FAILED: [
              { guard: "isCurrentResult", target: "settling", actions: ["failInflight"] },
              { actions: ["ignoreStaleResult"] },
            ],
            PUSH_LOCAL_ONLY: [
              { guard: "isCurrentResult", target: "#publication.localOnly", actions: ["fenceGeneration"] },
              { actions: ["ignoreStaleResult"] },
            ],
            PUSH_UNREACHABLE: [
              { guard: "isCurrentResultWithQueued", target: "settling", actions: ["dropInflight"] },
              { guard: "isCurrentResult", target: "idle", actions: ["fenceGeneration"] },
              { actions: ["ignoreStaleResult"] },
            ],
          },
          states: {
            inFlight: {
              description: "The push runs; a turn end with a newer target queued is remembered as turnEnded.",
              on: { TURN_END: { guard: "hasQueued", target: "turnEnded" } },
            },
            turnEnded: {
              description: "A turn ended after a newer target was queued: the current result starts its push at once.",
              on: {
                ACCEPTED: { target: "inFlight", actions: ["queueNewest"] },
                PUSH_OK: {
                  guard: "isCurrentResult",
                  target: "inFlight",
                  actions: ["confirmInflight", "startPushQueued"],
                },
                PUSH_FAILED: {
                  guard: "isCurrentResult",
                  target: "inFlight",
                  actions: ["failInflight", "startPushQueued"],
                },
                PUSH_UNREACHABLE: {
                  guard: "isCurrentResult",
                  target: "inFlight",
                  actions: ["dropInflight", "startPushQueued"],
                },
              },
            },
          },
        },
        settling: {
          description: "A current result arrived: decide what comes next.",
          always: [
            { guard: "hasQueuedUnderTransitionPolicy", target: "pushing", actions: ["startPushQueued"] },
            { guard: "hasQueued", target: "queued" },
            { guard: "hasPending", target: "pending" },
            { target: "confirmed" },
          ],
        },
        confirmed: {
          description: "The newest accepted target is confirmed on the remote.",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
          },
        },
        pending: {
          description: "Unconfirmed publication: retried on turn_end or RETRY; survives restart.",
          on: {
            ACCEPTED: [
              { guard: "isTransitionPolicy", target: "pushing", actions: ["startPushNewest"] },
              { target: "queued", actions: ["queueNewest"] },
            ],
            TURN_END: { target: "pushing", actions: ["startPushPending"] },
            RETRY: { target: "pushing", actions: ["startPushPending"] },
          },
        },
      },
    },
    closed: { type: "final", description: "Shut down: the generation is fenced; late results are dropped." },
  },
});

export type PublicationSnapshot = SnapshotFrom<typeof publicationMachine>;

export type PublicationStatus =
  "file-only" | "local-only" | "off" | "idle" | "checking" | "queued" | "pushing" | "confirmed" | "pending" | "closed";
export function publicationStatus(s: PublicationSnapshot): PublicationStatus {
  if (s.matches("fileOnly")) return "file-only";
  if (s.matches("localOnly")) return "local-only";
  if (s.matches("off")) return "off";
  if (s.matches("closed")) return "closed";
  for (const k of ["idle", "checking", "queued", "pushing", "confirmed", "pending"] as const)
    if (s.matches({ remote: k })) return k;
  return "idle";
}

/**
 * What a RETRY can do now: wait for the push in flight, wait for the remote's answer about a restored
 * target (it pushes when needed), wait for a queued target's turn end, push the pending target, or nothing.
 */
export type RetryPlan =
  | { kind: "await"; target: string }
  | { kind: "checking"; target: string }
  | { kind: "queued"; target: string }
  | { kind: "push"; target: string }
  | { kind: "idle" };
export function retryPlan(s: PublicationSnapshot): RetryPlan {
  const { inflight, queued, pending } = s.context;
  if (s.matches({ remote: "pushing" }) && inflight !== null) return { kind: "await", target: inflight };
  if (s.matches({ remote: "checking" }) && pending !== null) return { kind: "checking", target: pending };
  if (queued !== null) return { kind: "queued", target: queued };
  if (s.matches({ remote: "pending" }) && pending !== null) return { kind: "push", target: pending };
  return { kind: "idle" };
}

/** The target a running push serves (a queued newer target first), or null when no push runs. */
export function pushingTarget(s: PublicationSnapshot): string | null {
  return s.matches({ remote: "pushing" }) ? (s.context.queued ?? s.context.inflight) : null;
}
