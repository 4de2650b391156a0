// Episode machine: activation lifecycle of one Pi branch (spec 001 "Usage and activation",
// "Runtime ownership", "Context lifecycle"). Pure: no fs, git or Pi imports. Every state that
// does I/O invokes a named actor (start the store, adopt it into Git, select the restore, persist
// a stop, remove an unsaved session's empty start) whose success and failure are drawn transitions;
// the runtime supplies the actors and the two host actions (register the tools, freeze the handoff)
// through `episodeMachine.provide`.
// It spawns one run actor (M5) per Pi run, equipped while the branch is active and State Flow's
// tools are; a run's end is the episode's transition (a bootstrap ends on an accepted answer).
// The runtime sends Pi's lifecycle as events and asks the query helpers of episode-queries.ts.
import { setup, assign, emit, enqueueActions, fromPromise, raise, spawnChild, type SnapshotFrom } from "xstate";
import { barrierMachine } from "./barrier.ts";
import type { RestoreResult } from "./restore.ts";
import { runMachine, type RunInput, type RunOpening } from "./run.ts";
import { NO_SPECIFICATION, specificationCarrying } from "./specification.ts";

import { errorText, retainedOf } from "./episode-types.ts";
import type {
  EpisodeContext,
  EpisodeEmitted,
  EpisodeInput,
  EpisodeMachineEvent,
  StartForkInput,
  StartStorageInput,
} from "./episode-types.ts";

type RestoreKind = RestoreResult["kind"];
const restoreIs =
  (kind: RestoreKind) =>
  ({ event }: { event: EpisodeMachineEvent }): boolean =>
    event.type === "xstate.done.actor.restore" && event.output.kind === kind;

/** The input of the run an event begins: how it began (announced by Pi, or by agent_start alone). */
function runInput(context: EpisodeContext, event: EpisodeMachineEvent, equipped: boolean): RunInput {
  const opening: RunOpening = event.type === "RUN_ANNOUNCED" ? event.trigger : { kind: "unannounced" };
  return { opening, equipped, specification: context.specification };
}

function notProvided(name: string) {
  return async (): Promise<never> => {
    throw new Error(`episode actor ${name} is supplied by the runtime (episodeMachine.provide)`);
  };
}

/** Genuinely new: Pi started or created a session and its branch holds nothing yet. */
export function isGenuinelyNewSession(event: EpisodeMachineEvent): boolean {
  return (
    event.type === "SESSION_START" && (event.reason === "startup" || event.reason === "new") && event.branch === "empty"
  );
}

export const episodeMachine = setup({
  types: {
    context: {} as EpisodeContext,
    events: {} as EpisodeMachineEvent,
    input: {} as EpisodeInput,
    emitted: {} as EpisodeEmitted,
  },
  guards: {
    autoStartNewSession: ({ context, event }) => context.autoStart && isGenuinelyNewSession(event),
    /** A session Pi created anew: whatever entries it was given, State Flow starts off there. */
    isNewSession: ({ event }) => event.type === "SESSION_START" && event.reason === "new",
    branchUnmarked: ({ event }) => event.type === "SESSION_START" && event.branch !== "marked",
    /** START on an active branch whose store is file-only while a git executable is now available. */
    startAdoptsGit: ({ event }) => event.type === "START" && event.adoptGit === true,
    restoredRevision: restoreIs("revision"),
    restoredPassive: restoreIs("passive"),
    restoredDisabled: restoreIs("disabled"),
    /** The branch's newest stop is another session's (a fork's parent): off here, and said. */
    restoredInheritedStop: ({ event }) =>
      event.type === "xstate.done.actor.restore" && event.output.kind === "disabled" && event.output.inherited === true,
    restoredFork: restoreIs("fork"),
    restoredForkUnavailable: restoreIs("forkUnavailable"),
    restoredNone: restoreIs("none"),
    restoredUnproven: restoreIs("unproven"),
    restoredLockBusy: restoreIs("lockBusy"),
    restoredUnanchored: restoreIs("unanchored"),
    toolsNotRegistered: ({ context }) => !context.toolsRegistered,
    runAccepted: ({ event }) => event.type === "xstate.done.actor.run" && event.output.accepted,
    runOpen: ({ context }) => context.run !== null,
    toolsNewlyMissing: ({ context, event }) =>
      event.type === "TOOLS_SYNCED" && event.missing.length > 0 && context.toolsMissing.length === 0,
    toolsPresent: ({ event }) =>
      (event.type === "RUN_ANNOUNCED" || event.type === "AGENT_START") && !event.toolsMissing,
    /** session_shutdown of a session Pi never saved and that does not go on (not a reload): nobody can resume it. */
    shutdownUnsaved: ({ event }) => event.type === "SHUTDOWN" && event.unsaved === true,
    /** The discard removed the session's empty start (its output names the folder). */
    discardRemoved: ({ event }) => event.type === "xstate.done.actor.discard" && event.output !== null,
  },
  actors: {
    run: runMachine,
    barrier: barrierMachine,
    // Supplied by the runtime (`provide`); these stand-ins only name what each one does.
    /** Opens (initializing when needed) the store and establishes the session origin or the frozen restart. */
    startStorage: fromPromise<void, StartStorageInput>(notProvided("startStorage")),
    /** Establishes a fork's origin: its own copy of the parent's session layer at the fork point. */
    startFork: fromPromise<string, StartForkInput>(notProvided("startFork")),
    /** Commits the active file-only branch's exact cohort into Git and rebinds the branch to it. */
    adoptGit: fromPromise<void>(notProvided("adoptGit")),
    /** Settles an interrupted publication, then selects the branch's restore from its checkpoint entries. */
    selectRestore: fromPromise<RestoreResult>(notProvided("selectRestore")),
    /** Publishes the branch's disabled config (no semantic step). */
    persistStop: fromPromise<void>(notProvided("persistStop")),
    /**
     * Removes the store session of a session Pi never saved when it holds nothing but its empty start (no
     * transition, an empty session layer, the files as this session left them); outputs the removed folder, or
     * null when it removed nothing.
     */
    discardUnsaved: fromPromise<string | null>(notProvided("discardUnsaved")),
  },
  actions: {
    /** Host action (provided): registers State Flow's tools with Pi. */
    registerTools: () => undefined,
    /** Host action (provided): appends the frozen exit handoff and the disabled marker to the branch. */
    freezeHandoff: () => undefined,
    /**
     * Host action (provided): records on the branch the interrupted requests the next prompt carries
     * (`carriedRequests` of the specification the run left), so a resume or /tree carries them on.
     */
    recordCarried: () => undefined,
    registerToolsOnce: enqueueActions(({ check, enqueue }) => {
      if (!check("toolsNotRegistered")) return;
      enqueue.assign({ toolsRegistered: true });
      enqueue("registerTools");
    }),
    // One run actor per Pi run: an open run ends when the next is announced and when the branch
    // leaves active (its answer can no longer be resolved there).
    endRun: enqueueActions(({ context, enqueue }) => {
      if (!context.run) return;
      enqueue.stopChild(context.run);
      enqueue.assign({ run: null });
    }),
    spawnEquippedRun: assign({
      run: ({ context, event, spawn }) => spawn("run", { id: "run", input: runInput(context, event, true) }),
    }),
    spawnOrdinaryRun: assign({
      run: ({ context, event, spawn }) => spawn("run", { id: "run", input: runInput(context, event, false) }),
    }),
    runEnded: assign(({ event }) =>
      event.type === "xstate.done.actor.run" ? { run: null, specification: event.output.specification } : {},
    ),
    // The selected point's own record: a later point's requests do not carry back, nor another session's.
    seedSpecification: assign({
      specification: ({ context, event }) =>
        event.type === "TREE" || event.type === "SESSION_START"
          ? specificationCarrying(event.carried)
          : context.specification,
    }),
    // The patch_state barrier (M4) lives as long as the episode: one per extension instance.
    spawnBarrier: spawnChild("barrier", { id: "barrier" }),
    noteToolsMissing: assign({
      toolsMissing: ({ context, event }) => (event.type === "TOOLS_SYNCED" ? event.missing : context.toolsMissing),
    }),
    reportToolsMissing: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "tools-missing" as const,
      detail: event.type === "TOOLS_SYNCED" ? event.missing.join(", ") : "",
    })),
    reportNotEnabled: emit({ type: "episode.notice", code: "not-enabled" } as const),
    reportAlreadyStopped: emit({ type: "episode.notice", code: "already-stopped" } as const),
    // An explicit start or stop answers (an automatic start of a new session is shown by the footer alone).
    reportStarted: emit({ type: "episode.notice", code: "started" } as const),
    reportStopped: emit({ type: "episode.notice", code: "stopped" } as const),
    reportForkOff: emit({ type: "episode.notice", code: "fork-off" } as const),
    reportForked: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "forked" as const,
      ...(event.type === "xstate.done.actor.storage" && typeof event.output === "string"
        ? { detail: event.output }
        : {}),
    })),
    reportForkUnavailable: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "fork-unavailable" as const,
      ...(event.type === "xstate.done.actor.restore" && event.output.kind === "forkUnavailable"
        ? { detail: event.output.detail }
        : event.type === "xstate.error.actor.storage"
          ? { detail: errorText(event.error) }
          : {}),
    })),
    reportAlreadyActive: emit({ type: "episode.notice", code: "already-active" } as const),
    reportStopRefused: emit({ type: "episode.notice", code: "stop-refused-unproven" } as const),
    reportStartRefused: emit({ type: "episode.notice", code: "start-refused-unproven" } as const),
    reportStartFailed: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "start-failed" as const,
      ...(event.type === "xstate.error.actor.storage" ? { detail: errorText(event.error) } : {}),
    })),
    reportAdopted: emit({ type: "episode.notice", code: "adopted-into-git" } as const),
    reportAdoptionFailed: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "adoption-failed" as const,
      ...(event.type === "xstate.error.actor.storage" ? { detail: errorText(event.error) } : {}),
    })),
    // An unsaved session's removed start is said where an explicit start or stop said where the state is kept.
    reportUnsavedRemoved: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "unsaved-removed" as const,
      ...(event.type === "xstate.done.actor.discard" && event.output !== null ? { detail: event.output } : {}),
    })),
    reportUnsavedKept: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "unsaved-kept" as const,
      ...(event.type === "xstate.error.actor.discard" ? { detail: errorText(event.error) } : {}),
    })),
    reportStopFailed: emit(({ event }) => ({
      type: "episode.notice" as const,
      code: "stop-failed" as const,
      ...(event.type === "xstate.error.actor.stop" ? { detail: errorText(event.error) } : {}),
    })),
    // A stop retried after a busy lock first restores the revision, then stops from there, so a
    // failed stop returns to that restored state rather than to an older active state.
    retryStopFromRestored: raise({ type: "STOP" }),
    reportLockBusy: emit({ type: "episode.notice", code: "restore-lock-busy" } as const),
    reportUnproven: emit(({ context }) => ({
      type: "episode.notice" as const,
      code: "restore-unproven" as const,
      ...(context.retained?.detail === undefined ? {} : { detail: context.retained.detail }),
    })),
    reportUnanchored: emit({ type: "episode.notice", code: "restore-unanchored" } as const),
    reportStopRefusedUnanchored: emit({ type: "episode.notice", code: "stop-refused-unanchored" } as const),
    retainRevision: assign({ retained: ({ event }) => retainedOf(event) }),
    clearRetainedRevision: assign({ retained: () => null }),
    // A session starts on the branch: its identity is kept, nothing retained or loaded before carries over.
    bindSession: enqueueActions(({ context, enqueue, event }) => {
      enqueue.assign({
        identity: event.type === "SESSION_START" ? (event.identity ?? null) : context.identity,
        retained: null,
        loaded: null,
      });
      enqueue("seedSpecification");
    }),
    keepLoaded: assign({ loaded: ({ context, event }) => (event.type === "LOADED" ? event.state : context.loaded) }),
    releaseLoaded: assign({ loaded: () => null }),
    // One publication actor per store generation: a new one replaces the one before (already fenced).
    spawnPublication: enqueueActions(({ enqueue, event }) => {
      if (event.type !== "PUBLICATION_OPENED") return;
      enqueue.stopChild("publication");
      // (the logic is the runtime's, provided per generation: XState's types allow an id only for named sources)
      enqueue.spawnChild(event.logic as never, { id: "publication", input: event.input } as never);
    }),
  },
}).createMachine({
  id: "episode",
  initial: "unbound",
  context: ({ input }) => ({
    autoStart: input.autoStart,
    toolsRegistered: false,
    retained: null,
    run: null,
    specification: NO_SPECIFICATION,
    toolsMissing: [],
    identity: null,
    loaded: null,
  }),
  entry: ["spawnBarrier"],
  on: {
    TOOLS_SYNCED: [
      { guard: "toolsNewlyMissing", actions: ["noteToolsMissing", "reportToolsMissing"] },
      { actions: ["noteToolsMissing"] },
    ],
    RUN_ANNOUNCED: { actions: ["endRun", "spawnOrdinaryRun"] },
    AGENT_START: [{ guard: "runOpen" }, { actions: ["spawnOrdinaryRun"] }],
    "xstate.done.actor.run": { actions: ["runEnded", "recordCarried"] },
    SESSION_START: [
      { guard: "autoStartNewSession", target: ".starting.fresh", actions: ["bindSession"] },
      { guard: "isNewSession", target: ".off", actions: ["bindSession"] },
      { guard: "branchUnmarked", target: ".off", actions: ["bindSession"] },
      { target: ".restoring.branch", actions: ["bindSession"] },
    ],
    LOADED: { actions: ["keepLoaded"] },
    // A /tree the current state does not act on still moves the branch point: its record is what carries.
    TREE: { actions: ["seedSpecification"] },
    PUBLICATION_OPENED: { actions: ["spawnPublication"] },
    SHUTDOWN: { target: ".closed", actions: ["clearRetainedRevision"] },
  },
  states: {
    unbound: {
      description: "Extension loaded; no session_start seen yet. Tools off, storage untouched.",
    },
    off: {
      description: "Ordinary Pi mode (manual default). Read-only: never initializes or migrates storage.",
      entry: ["releaseLoaded"],
      on: {
        LOADED: {},
        START: { target: "starting.fromOff" },
        STOP: { actions: ["reportNotEnabled"] },
        TREE: { target: "restoring.branch", actions: ["seedSpecification"] },
      },
    },
    starting: {
      description: "Explicit or configured automatic start: the only state that may initialize storage.",
      tags: ["busy"],
      initial: "fresh",
      states: {
        fresh: {
          description: "Automatic start of a genuinely new session: nothing to migrate.",
          invoke: {
            id: "storage",
            src: "startStorage",
            input: { fromFrozen: false },
            onDone: { target: "#episode.active.steady" },
            onError: { target: "#episode.off", actions: ["reportStartFailed"] },
          },
        },
        fromOff: {
          description: "Start mid-conversation: the pre-Flow transcript migrates in one bootstrap run.",
          invoke: {
            id: "storage",
            src: "startStorage",
            input: { fromFrozen: false },
            onDone: { target: "#episode.active.bootstrap.fromTranscript", actions: ["reportStarted"] },
            onError: { target: "#episode.off", actions: ["reportStartFailed"] },
          },
        },
        fromPassive: {
          description:
            "Restart after stop: bootstraps from the frozen exit handoff, never the raw pre-stop transcript.",
          invoke: {
            id: "storage",
            src: "startStorage",
            input: { fromFrozen: true },
            onDone: { target: "#episode.active.bootstrap.fromHandoff", actions: ["reportStarted"] },
            onError: { target: "#episode.passive", actions: ["reportStartFailed"] },
          },
        },
        fromFork: {
          description:
            "A fork of an enabled State Flow session: its session layer starts as its own copy of the parent's at " +
            "the fork point, over the shared state as it is now; the parent is untouched. A copy that cannot be " +
            "written leaves the fork off, said.",
          invoke: {
            id: "storage",
            src: "startFork",
            input: ({ event }) => ({
              copy: event.type === "xstate.done.actor.restore" && event.output.kind === "fork" ? event.output.copy : {},
            }),
            onDone: { target: "#episode.active.steady", actions: ["reportForked"] },
            onError: { target: "#episode.off", actions: ["reportForkUnavailable"] },
          },
        },
        fromUnanchored: {
          description:
            "Start on a branch whose newest entry is an unanchored older form: an empty session origin, as on a " +
            "pre-runtime branch; the older entry is not imported, the transcript migrates in one bootstrap run.",
          invoke: {
            id: "storage",
            src: "startStorage",
            input: { fromFrozen: false },
            onDone: {
              target: "#episode.active.bootstrap.fromTranscript",
              actions: ["clearRetainedRevision", "reportStarted"],
            },
            onError: { target: "#episode.failedClosed.unanchored", actions: ["reportStartFailed"] },
          },
        },
        adopting: {
          description:
            "Start on an active file-only branch once Git is available: its exact current cohort is committed into " +
            "Git. Tools are off meanwhile; success or failure returns to exactly the active state it left (a failure " +
            "keeps the file store).",
          invoke: {
            id: "storage",
            src: "adoptGit",
            onDone: { target: "#episode.active.hist", actions: ["reportAdopted"] },
            onError: { target: "#episode.active.hist", actions: ["reportAdoptionFailed"] },
          },
        },
      },
    },
    active: {
      description: "Branch enabled: State Flow tools, protocol, resolution and projection are on.",
      initial: "steady",
      entry: ["registerToolsOnce"],
      exit: ["endRun"],
      on: {
        RUN_ANNOUNCED: [
          { guard: "toolsPresent", actions: ["endRun", "spawnEquippedRun"] },
          { actions: ["endRun", "spawnOrdinaryRun"] },
        ],
        AGENT_START: [
          { guard: "runOpen" },
          { guard: "toolsPresent", actions: ["spawnEquippedRun"] },
          { actions: ["spawnOrdinaryRun"] },
        ],
        STOP: { target: "stopping" },
        START: [{ guard: "startAdoptsGit", target: "starting.adopting" }, { actions: ["reportAlreadyActive"] }],
        TREE: { target: "restoring.branch", actions: ["seedSpecification"] },
      },
      states: {
        hist: {
          type: "history",
          history: "deep",
          description:
            "Where a failed stop or a finished adoption returns to: the exact bootstrap (transcript or handoff) " +
            "or steady.",
        },
        bootstrap: {
          description: "One complete migration run that still sees the pre-Flow context.",
          initial: "fromTranscript",
          on: {
            "xstate.done.actor.run": { guard: "runAccepted", target: "steady", actions: ["runEnded", "recordCarried"] },
            // (only an explicit start enters a bootstrap: the person was told where the state is kept)
            SHUTDOWN: { guard: "shutdownUnsaved", target: "#episode.discarding.said" },
          },
          states: {
            fromTranscript: { description: "Migrates the active pre-Flow transcript." },
            fromHandoff: { description: "Migrates the frozen exit handoff plus post-stop messages." },
          },
        },
        steady: {
          description: "Normal enabled operation: projection is state + current run only.",
          // (steady without a saved conversation: an automatic start, a fork's, or a restore of this session)
          on: { SHUTDOWN: { guard: "shutdownUnsaved", target: "#episode.discarding.silent" } },
        },
      },
    },
    stopping: {
      description:
        "STOP accepted: the branch's disabled config is being persisted (no semantic step). Passive begins only " +
        "once it is durable; tools are off meanwhile.",
      tags: ["busy"],
      invoke: {
        id: "stop",
        src: "persistStop",
        onDone: { target: "passive", actions: ["freezeHandoff", "reportStopped"] },
        onError: { target: "#episode.active.hist", actions: ["reportStopFailed"] },
      },
    },
    passive: {
      description:
        "Stopped in this physical session: frozen exit handoff + post-stop messages, tools off. " +
        "Survives reload, resume and /tree; a new or forked session never inherits it.",
      on: {
        START: { target: "starting.fromPassive" },
        STOP: { actions: ["reportAlreadyStopped"] },
        TREE: { actions: ["seedSpecification", "freezeHandoff"] },
        SHUTDOWN: { guard: "shutdownUnsaved", target: "discarding.said" },
      },
    },
    restoring: {
      description: "Selecting branch provenance from Pi checkpoint entries (never arbitrary HEAD).",
      tags: ["busy"],
      invoke: {
        id: "restore",
        src: "selectRestore",
        // A restore that failed before it checked any pointer proves nothing: failed closed, with the reason.
        onError: { target: "#episode.failedClosed.unproven", actions: ["retainRevision", "reportUnproven"] },
      },
      initial: "branch",
      // Results both substates treat alike; each substate handles `revision` and `unproven` first.
      on: {
        "xstate.done.actor.restore": [
          { guard: "restoredPassive", target: "#episode.passive", actions: ["clearRetainedRevision"] },
          {
            guard: "restoredInheritedStop",
            target: "#episode.off",
            actions: ["clearRetainedRevision", "reportForkOff"],
          },
          { guard: "restoredDisabled", target: "#episode.off", actions: ["clearRetainedRevision"] },
          { guard: "restoredFork", target: "#episode.starting.fromFork", actions: ["clearRetainedRevision"] },
          {
            guard: "restoredForkUnavailable",
            target: "#episode.off",
            actions: ["clearRetainedRevision", "reportForkUnavailable"],
          },
          { guard: "restoredNone", target: "#episode.off", actions: ["clearRetainedRevision"] },
          {
            guard: "restoredLockBusy",
            target: "#episode.failedClosed.lockBusy",
            actions: ["retainRevision", "reportLockBusy"],
          },
          {
            guard: "restoredUnanchored",
            target: "#episode.failedClosed.unanchored",
            actions: ["retainRevision", "reportUnanchored"],
          },
        ],
      },
      states: {
        branch: {
          description: "Resume, reload or /tree of an existing branch, or a retried start.",
          on: {
            "xstate.done.actor.restore": [
              { guard: "restoredRevision", target: "#episode.active.steady", actions: ["clearRetainedRevision"] },
              {
                guard: "restoredUnproven",
                target: "#episode.failedClosed.unproven",
                actions: ["retainRevision", "reportUnproven"],
              },
            ],
          },
        },
        retryStop: {
          description: "STOP after a lock-busy restore: retry restoration before durably disabling the branch.",
          on: {
            "xstate.done.actor.restore": [
              {
                guard: "restoredRevision",
                target: "#episode.active.steady",
                actions: ["clearRetainedRevision", "retryStopFromRestored"],
              },
              {
                guard: "restoredUnproven",
                target: "#episode.failedClosed.unproven",
                actions: ["retainRevision", "reportStopRefused"],
              },
            ],
            "xstate.error.actor.restore": {
              target: "#episode.failedClosed.unproven",
              actions: ["retainRevision", "reportStopRefused"],
            },
          },
        },
      },
    },
    failedClosed: {
      description: "Branch provenance could not be proven; nothing replaces existing runtime.",
      initial: "unproven",
      entry: ["releaseLoaded"],
      on: { TREE: { target: "restoring.branch", actions: ["seedSpecification"] }, LOADED: {} },
      states: {
        unproven: {
          description: "Unproven branch: STOP and START fail visibly; select a valid checkpoint (/tree) first.",
          on: {
            STOP: { actions: ["reportStopRefused"] },
            START: { actions: ["reportStartRefused"] },
          },
        },
        lockBusy: {
          description: "Transient publication-lock failure: the selected revision is retained for retry.",
          on: {
            START: { target: "#episode.restoring.branch" },
            STOP: { target: "#episode.restoring.retryStop" },
          },
        },
        unanchored: {
          description:
            "The newest entry is an older form carrying state or an enabled runtime but no revision: neither " +
            "restored nor reduced to off. STOP fails visibly; START establishes an empty session origin.",
          on: {
            STOP: { actions: ["reportStopRefusedUnanchored"] },
            START: { target: "#episode.starting.fromUnanchored" },
          },
        },
      },
    },
    discarding: {
      description:
        "session_shutdown of a bound branch Pi never saved (not a reload): nobody can resume it, so its store " +
        "session is removed when it holds nothing but its empty start. No session start or second shutdown " +
        "interrupts it; done or failed, the episode closes.",
      tags: ["busy"],
      invoke: {
        id: "discard",
        src: "discardUnsaved",
        onDone: { target: "closed" },
        onError: { target: "closed", actions: ["reportUnsavedKept"] },
      },
      initial: "silent",
      on: { SESSION_START: {}, SHUTDOWN: {} },
      states: {
        said: {
          description:
            "An explicit start (a bootstrap) or stop (passive) said the state is kept: a removal is said, with the " +
            "folder.",
          on: {
            "xstate.done.actor.discard": {
              guard: "discardRemoved",
              target: "#episode.closed",
              actions: ["reportUnsavedRemoved"],
            },
          },
        },
        silent: {
          description:
            "Steady, reached without an explicit start in this runtime (autoStart on a new session, a fork, a " +
            "restore): nobody asked for the start here, so its removal is not said.",
        },
      },
    },
    closed: {
      type: "final",
      description: "session_shutdown (after discarding, for an unsaved session): the actor accepts nothing more.",
    },
  },
});

export type EpisodeSnapshot = SnapshotFrom<typeof episodeMachine>;
