import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { createActor, fromPromise, type AnyEventObject, type AnyMachineSnapshot } from "xstate";
import {
  episodeMachine as pureEpisodeMachine,
  isGenuinelyNewSession,
  type EpisodeSnapshot,
} from "../../machines/episode.ts";
import { type EpisodeMachineEvent, type StartForkInput, type StartStorageInput } from "../../machines/episode-types.ts";
import {
  isToolsActive,
  mayInitializeStorage,
  openRun,
  projectionMode,
  episodeStateName,
} from "../../machines/episode-queries.ts";
import type { RestoreResult } from "../../machines/restore.ts";
import { specificationCarrying } from "../../machines/specification.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";
import {
  DISCARD_FAILED,
  DISCARD_NOTHING,
  DISCARD_REMOVED,
  EPISODE_EVENTS,
  STOP_FAILED,
  FORK_COPIED,
  STOP_PERSISTED,
  STORAGE_FAILED,
  STORAGE_READY,
  RUN_ACCEPTED,
  RUN_ANNOUNCED,
  RUN_NOT_ACCEPTED,
  restored,
} from "../support/alphabets.ts";

/**
 * What the episode asked of its stand-in actors and host actions, in order; each checked step
 * drains it. The stand-ins never settle: a path sends their done and error events itself.
 */
const performed: string[] = [];
const never = () => new Promise<never>(() => undefined);
const episodeMachine = pureEpisodeMachine.provide({
  actors: {
    startStorage: fromPromise<void, StartStorageInput>(({ input }) => {
      performed.push(input.fromFrozen ? "start-from-frozen" : "start-origin");
      return never();
    }),
    startFork: fromPromise<string, StartForkInput>(() => (performed.push("start-fork-copy"), never())),
    adoptGit: fromPromise<void>(() => (performed.push("adopt-git"), never())),
    selectRestore: fromPromise<RestoreResult>(() => (performed.push("select-restore"), never())),
    persistStop: fromPromise<void>(() => (performed.push("persist-disabled"), never())),
    discardUnsaved: fromPromise<string | null>(() => (performed.push("discard-unsaved"), never())),
  },
  actions: {
    registerTools: () => void performed.push("register-tools"),
    freezeHandoff: () => void performed.push("freeze-handoff"),
    recordCarried: () => void performed.push("record-carried"),
  },
});

const allEvents = EPISODE_EVENTS;
// One representative per SESSION_START guard branch; SHUTDOWN (either kind: both end the path, an unsaved
// one after discarding, whose results act nowhere else), the adoption START (a detour
// that returns to the active state it left, multiplying every simple path) and the unanchored
// restore (a second way into a start from a failed-closed branch), a fork's restores (another way into a start,
// and into off) and an inherited stop (into off, as a plain disabled one), a restore that fails outright (a
// second way into failedClosed.unproven) and a run that ends unaccepted (a self-loop) left to shortest
// paths and edge tours.
const simpleEvents: EpisodeMachineEvent[] = [
  { type: "SESSION_START", reason: "new", branch: "empty" },
  { type: "SESSION_START", reason: "fork", branch: "marked" },
  { type: "SESSION_START", reason: "resume", branch: "unmarked" },
  { type: "SESSION_START", reason: "resume", branch: "marked" },
  ...allEvents.filter(
    (e) =>
      e.type !== "SESSION_START" &&
      e.type !== "SHUTDOWN" &&
      e.type !== "xstate.done.actor.discard" &&
      e.type !== "xstate.error.actor.discard" &&
      !(e.type === "START" && e.adoptGit) &&
      !(e.type === "xstate.done.actor.restore" && e.output.kind === "unanchored") &&
      !(e.type === "xstate.done.actor.restore" && e.output.kind.startsWith("fork")) &&
      !(e.type === "xstate.done.actor.restore" && e.output.kind === "disabled" && e.output.inherited) &&
      e.type !== "xstate.error.actor.restore" &&
      !(e.type === "xstate.done.actor.run" && !e.output.accepted) &&
      !(e.type === "RUN_ANNOUNCED" && (e.toolsMissing || e.trigger.kind === "message")) &&
      e.type !== "AGENT_START" &&
      !(e.type === "TREE" && e.carried) &&
      e.type !== "TOOLS_SYNCED" &&
      e.type !== "LOADED" &&
      e.type !== "PUBLICATION_OPENED",
  ),
];

const name = (s: AnyMachineSnapshot) => episodeStateName(s as never);

interface Trace {
  /** a new/fork SESSION_START was seen and no STOP since */
  freshPhysicalSession: boolean;
  /** the last active state seen (where a failed stop must return) */
  lastActive: string | null;
}

/** The work one step asked for (see `performed`). */
let stepWork: string[] = [];
function emittedEffect(_step: StepInfo<EpisodeMachineEvent>, effect: string): boolean {
  return stepWork.includes(effect);
}

/** Returns violations (each prefixed with its invariant id) for one step. */
export function checkEpisodeStep(step: StepInfo<EpisodeMachineEvent>, trace: Trace, autoStart: boolean): string[] {
  const v: string[] = [];
  stepWork = performed.splice(0);
  const { prev, event, next } = step;
  const before = name(prev);
  const after = name(next);
  const changed = before !== after;
  // (a session start a discard waits out changes nothing: I1.10)
  const startsSession = event.type === "SESSION_START" && !before.startsWith("discarding");
  if (startsSession && (event.reason === "new" || event.reason === "fork")) trace.freshPhysicalSession = true;
  if (event.type === "STOP") trace.freshPhysicalSession = false;

  // I1.1
  if (isToolsActive(next as never) !== after.startsWith("active")) v.push(`I1.1 isToolsActive disagrees with ${after}`);
  if (!before.startsWith("active") && after.startsWith("active")) {
    const ok =
      (event.type === "xstate.done.actor.storage" && before.startsWith("starting")) ||
      (event.type === "xstate.error.actor.storage" && before === "starting.adopting") ||
      (event.type === "xstate.done.actor.restore" &&
        event.output.kind === "revision" &&
        before === "restoring.branch") ||
      (event.type === "xstate.error.actor.stop" && before === "stopping");
    if (!ok) v.push(`I1.1 tools became active from ${before} on ${JSON.stringify(event)}`);
  }
  // I1.2
  if (!before.startsWith("starting") && after.startsWith("starting")) {
    // (a fork of an enabled session starts as its parent was started: it writes its copy into the existing store)
    const ok =
      event.type === "START" ||
      (event.type === "SESSION_START" && autoStart && isGenuinelyNewSession(event)) ||
      (event.type === "xstate.done.actor.restore" && event.output.kind === "fork" && after === "starting.fromFork");
    if (!ok)
      v.push(`I1.2 storage initialization entered from ${before} on ${JSON.stringify(event)} (autoStart=${autoStart})`);
  }
  if (mayInitializeStorage(next as never) !== after.startsWith("starting"))
    v.push(`I1.2 mayInitializeStorage disagrees with ${after}`);
  // I1.3
  if (event.type === "SESSION_START" && !isGenuinelyNewSession(event) && after.startsWith("starting"))
    v.push(`I1.3 autoStart enabled a ${event.reason} session with a ${event.branch} branch`);
  if (event.type === "TREE" && !before.startsWith("starting") && after.startsWith("starting"))
    v.push("I1.3 autoStart enabled a /tree navigation");
  // I1.4 (machine half; the marker half — a foreign stop marker restores as disabled — is in restore.test.ts)
  if (startsSession && event.reason === "new" && after !== "off" && after !== "starting.fresh")
    v.push(`I1.4 a new physical session consulted inherited markers and reached ${after}`);
  // A fork reads its inherited markers only to copy: it is never bound to them (active) nor passive at once.
  if (startsSession && event.reason === "fork" && (after === "passive" || after.startsWith("active")))
    v.push(`I1.4 a forked physical session reached ${after} without its own copy`);
  if (event.type === "xstate.done.actor.restore" && event.output.kind === "fork" && after !== "starting.fromFork")
    v.push(`I1.4 a fork's restore reached ${after}, not its own copy (starting.fromFork)`);
  if (
    event.type === "xstate.done.actor.restore" &&
    event.output.kind === "disabled" &&
    event.output.inherited &&
    after !== "off"
  )
    v.push(`I1.4 a stop inherited from another session reached ${after}, not off`);
  if (
    trace.freshPhysicalSession &&
    before.startsWith("off") === false &&
    after === "passive" &&
    event.type !== "STOP" &&
    event.type !== "xstate.done.actor.restore"
  )
    v.push(`I1.4 a new or forked physical session reached passive via ${JSON.stringify(event)}`);
  // I1.5
  if (before !== "passive" && after === "passive") {
    const ok =
      (event.type === "xstate.done.actor.stop" && before === "stopping") ||
      (event.type === "xstate.done.actor.restore" && event.output.kind === "passive") ||
      (event.type === "xstate.error.actor.storage" && before === "starting.fromPassive");
    if (!ok) v.push(`I1.5 passive entered from ${before} on ${JSON.stringify(event)}`);
  }
  // A start that cannot open storage returns to where it started from: a failed restart keeps the
  // frozen handoff (passive), a failed first start is ordinary mode again; both say so.
  if (event.type === "xstate.error.actor.storage" && before.startsWith("starting") && before !== "starting.adopting") {
    const expected =
      before === "starting.fromPassive"
        ? "passive"
        : before === "starting.fromUnanchored"
          ? "failedClosed.unanchored"
          : "off";
    if (after !== expected) v.push(`I1.5 a failed start from ${before} went to ${after}, not back to ${expected}`);
    const said = before === "starting.fromFork" ? "fork-unavailable" : "start-failed";
    if (!step.emitted.some((e) => e.type === "episode.notice" && (e as { code?: string }).code === said))
      v.push(`I1.5 a failed start from ${before} was silent`);
  }
  // I1.6: a restart after stop starts from the frozen stop boundary, a fork from its copy, every other start from
  // a new origin
  if (!before.startsWith("starting") && after.startsWith("starting.") && after !== "starting.adopting") {
    const expected =
      after === "starting.fromPassive"
        ? "start-from-frozen"
        : after === "starting.fromFork"
          ? "start-fork-copy"
          : "start-origin";
    if (!emittedEffect(step, expected)) v.push(`I1.6 ${after} was entered without ${expected} (did: ${stepWork})`);
  }
  // I1.6 / I1.7
  // A failed stop (I1.12) and an adoption (I1.13) return to exactly the active state they left,
  // so they re-enter a bootstrap only if they were in that very bootstrap.
  const returnedFromFailedStop =
    ((before === "stopping" && event.type === "xstate.error.actor.stop") ||
      (before === "starting.adopting" &&
        (event.type === "xstate.done.actor.storage" || event.type === "xstate.error.actor.storage"))) &&
    after === (trace.lastActive ?? "active.steady");
  if (
    after === "active.bootstrap.fromHandoff" &&
    before !== after &&
    before !== "starting.fromPassive" &&
    !returnedFromFailedStop
  )
    v.push(`I1.6 handoff bootstrap entered from ${before}`);
  if (
    after === "active.bootstrap.fromTranscript" &&
    before !== after &&
    before !== "starting.fromOff" &&
    before !== "starting.fromUnanchored" &&
    !returnedFromFailedStop
  )
    v.push(`I1.6 transcript bootstrap entered from ${before}`);
  if (
    before === "starting.fromOff" &&
    event.type === "xstate.done.actor.storage" &&
    after !== "active.bootstrap.fromTranscript"
  )
    v.push(`I1.6 a mid-conversation start reached ${after} instead of bootstrapping from the transcript`);
  if (
    before === "starting.fromPassive" &&
    event.type === "xstate.done.actor.storage" &&
    after !== "active.bootstrap.fromHandoff"
  )
    v.push(`I1.6 a restart after stop reached ${after} instead of bootstrapping from the frozen handoff`);
  // (the run's actor ending with an answer accepted is what ends a bootstrap)
  const runAccepted = event.type === "xstate.done.actor.run" && event.output.accepted;
  if (before.startsWith("active.bootstrap") && runAccepted && after !== "active.steady")
    v.push(`I1.7 an accepted run in ${before} led to ${after}, not active.steady`);
  if (before.startsWith("active.bootstrap") && !runAccepted && after === "active.steady")
    v.push(`I1.7 ${before} left for steady without an accepted run (${JSON.stringify(event)})`);
  if (before === "active.steady" && after.startsWith("active.bootstrap")) v.push("I1.7 steady returned to bootstrap");
  // I1.8
  if (before === "failedClosed.unproven" && (event.type === "STOP" || event.type === "START")) {
    if (changed) v.push(`I1.8 ${event.type} on an unproven branch moved to ${after}`);
    if (!step.emitted.some((e) => e.type === "episode.notice"))
      v.push(`I1.8 ${event.type} on an unproven branch failed silently`);
  }
  // I1.9
  if (after === "failedClosed.lockBusy" && next.context.retained?.revision !== "r-sel")
    v.push(`I1.9 lock-busy restore lost the selected revision (${JSON.stringify(next.context.retained)})`);
  // the retained pointer is the one the failed restore reported, with its reason and detail
  if (
    event.type === "xstate.done.actor.restore" &&
    before.startsWith("restoring") &&
    after.startsWith("failedClosed")
  ) {
    const { output: result } = event;
    const detail = "detail" in result && result.detail !== undefined ? { detail: result.detail } : {};
    const expected =
      result.kind === "unproven" || result.kind === "lockBusy"
        ? { kind: result.kind, revision: result.revision, ...detail }
        : result.kind === "unanchored"
          ? { kind: result.kind, revision: null, ...detail }
          : null;
    if (!isDeepStrictEqual(next.context.retained, expected))
      v.push(`I1.9 retained ${JSON.stringify(next.context.retained)} after the restore said ${JSON.stringify(result)}`);
  }
  // A restore that failed outright checked no pointer: failed closed as unproven, with the store's words, said.
  if (event.type === "xstate.error.actor.restore" && before.startsWith("restoring")) {
    const expected = { kind: "unproven", revision: null, detail: (event.error as Error).message };
    if (after !== "failedClosed.unproven") v.push(`I1.9 a failed restore went to ${after}`);
    if (!isDeepStrictEqual(next.context.retained, expected))
      v.push(`I1.9 retained ${JSON.stringify(next.context.retained)} after the restore failed`);
    const code = before === "restoring.retryStop" ? "stop-refused-unproven" : "restore-unproven";
    if (!step.emitted.some((e) => e.type === "episode.notice" && (e as { code?: string }).code === code))
      v.push(`I1.9 a failed restore from ${before} did not say ${code}`);
  }
  // (a start replacing an unanchored entry keeps it until the start succeeds: a failed one returns there)
  const retains =
    after.startsWith("failedClosed") || after.startsWith("restoring") || after === "starting.fromUnanchored";
  if (
    (after.startsWith("failedClosed") && next.context.retained === null) ||
    (next.context.retained !== null && !retains)
  )
    v.push(`I1.9 the retained pointer (${JSON.stringify(next.context.retained)}) disagrees with ${after}`);
  if (
    before === "failedClosed.lockBusy" &&
    (event.type === "START" || event.type === "STOP") &&
    !after.startsWith("restoring")
  )
    v.push(`I1.9 ${event.type} after lock-busy went to ${after} instead of retrying restoration`);
  // I1.12
  if (before !== "stopping" && after === "stopping") {
    const ok =
      (event.type === "STOP" && before.startsWith("active")) ||
      (event.type === "xstate.done.actor.restore" &&
        event.output.kind === "revision" &&
        before === "restoring.retryStop");
    // (the retried stop restores the revision first and then stops: one macrostep)
    if (!ok) v.push(`I1.12 stopping entered from ${before} on ${JSON.stringify(event)}`);
    if (!emittedEffect(step, "persist-disabled"))
      v.push("I1.12 stopping entered without persisting the disabled config");
  }
  if (before === "stopping" && event.type === "xstate.done.actor.stop" && !emittedEffect(step, "freeze-handoff"))
    v.push("I1.12 passive began without freezing the exit handoff");
  if (before === "stopping" && event.type === "xstate.error.actor.stop") {
    const expected = trace.lastActive ?? "active.steady";
    if (after !== expected) v.push(`I1.12 a failed stop went to ${after} instead of back to ${expected}`);
    if (!step.emitted.some((e) => e.type === "episode.notice")) v.push("I1.12 a failed stop was silent");
  }
  // I1.17: an unanchored older entry fails closed, never off; STOP is refused visibly; only START leaves
  // it, for a fresh session origin, and a failed start returns to it.
  if (
    event.type === "xstate.done.actor.restore" &&
    event.output.kind === "unanchored" &&
    before.startsWith("restoring")
  ) {
    if (after !== "failedClosed.unanchored") v.push(`I1.17 an unanchored older entry restored to ${after}`);
    if (
      !step.emitted.some((e) => e.type === "episode.notice" && (e as { code?: string }).code === "restore-unanchored")
    )
      v.push("I1.17 an unanchored older entry failed closed silently");
  }
  if (before === "failedClosed.unanchored" && event.type === "STOP") {
    if (changed) v.push(`I1.17 STOP on an unanchored branch moved to ${after}`);
    if (!step.emitted.some((e) => e.type === "episode.notice")) v.push("I1.17 STOP on an unanchored branch was silent");
  }
  if (before === "failedClosed.unanchored" && event.type === "START") {
    if (after !== "starting.fromUnanchored") v.push(`I1.17 START on an unanchored branch went to ${after}`);
    if (!emittedEffect(step, "start-origin")) v.push("I1.17 START on an unanchored branch did not start an origin");
  }
  if (before !== "failedClosed.unanchored" && after === "failedClosed.unanchored") {
    const ok =
      (event.type === "xstate.done.actor.restore" && event.output.kind === "unanchored") ||
      (event.type === "xstate.error.actor.storage" && before === "starting.fromUnanchored");
    if (!ok) v.push(`I1.17 failedClosed.unanchored entered from ${before} on ${JSON.stringify(event)}`);
  }
  if (
    before === "starting.fromUnanchored" &&
    event.type === "xstate.done.actor.storage" &&
    after !== "active.bootstrap.fromTranscript"
  )
    v.push(`I1.17 a start replacing an unanchored entry reached ${after}, not the transcript bootstrap`);
  // I1.16 (the adapter refuses input there; the machine gives it nothing to run with)
  if (after.startsWith("failedClosed")) {
    const snapshot = next as EpisodeSnapshot;
    if (projectionMode(snapshot) !== "failedClosed") v.push(`I1.16 ${after} projects ${projectionMode(snapshot)}`);
    if (isToolsActive(snapshot)) v.push(`I1.16 tools are active in ${after}`);
    if (openRun(snapshot)?.getSnapshot().context.equipped) v.push(`I1.16 an equipped run is open in ${after}`);
  }
  // I1.13
  if (before !== "starting.adopting" && after === "starting.adopting") {
    if (!(event.type === "START" && event.adoptGit === true && before.startsWith("active")))
      v.push(`I1.13 adoption entered from ${before} on ${JSON.stringify(event)}`);
    if (!emittedEffect(step, "adopt-git")) v.push("I1.13 adoption entered without initializing storage");
  }
  if (
    before === "starting.adopting" &&
    (event.type === "xstate.done.actor.storage" || event.type === "xstate.error.actor.storage")
  ) {
    const expected = trace.lastActive ?? "active.steady";
    if (after !== expected)
      v.push(`I1.13 ${event.type} after adoption went to ${after} instead of back to ${expected}`);
    const code = event.type === "xstate.done.actor.storage" ? "adopted-into-git" : "adoption-failed";
    if (!step.emitted.some((e) => e.type === "episode.notice" && (e as { code?: string }).code === code))
      v.push(`I1.13 ${event.type} after adoption without notice ${code}`);
  }
  if (
    before.startsWith("active") &&
    event.type === "START" &&
    !event.adoptGit &&
    (changed || !step.emitted.some((e) => e.type === "episode.notice"))
  )
    v.push(`I1.13 START without adoptGit on an active branch moved to ${after} or was silent`);
  if (after.startsWith("active")) trace.lastActive = after;
  if (
    event.type === "SESSION_START" ||
    event.type === "TREE" ||
    (before === "restoring.retryStop" && event.type === "xstate.done.actor.restore")
  )
    trace.lastActive = null;
  // I1.5: a passive /tree re-freezes the handoff at the new position
  if (before === "passive" && event.type === "TREE" && !emittedEffect(step, "freeze-handoff"))
    v.push("I1.5 /tree while passive did not freeze the handoff again");
  // I1.15: tools are registered once, on the first activation
  const registered = emittedEffect(step, "register-tools");
  // (a stop retried after a busy lock passes through active within one macrostep)
  const passedActive = after.startsWith("active") || (before === "restoring.retryStop" && after === "stopping");
  if (registered && (prev.context.toolsRegistered || !passedActive))
    v.push(`I1.15 tools registered again or outside active (${before} → ${after})`);
  if (!prev.context.toolsRegistered && passedActive && !registered)
    v.push(`I1.15 ${after} reached without registering the tools`);
  if (prev.context.toolsRegistered && !next.context.toolsRegistered) v.push("I1.15 tools became unregistered");
  // I1.14: one run actor per Pi run; equipped only in active with State Flow's tools; none equipped outside active
  const run = openRun(next as EpisodeSnapshot);
  const previous = openRun(prev as EpisodeSnapshot);
  if (run?.getSnapshot().context.equipped && !after.startsWith("active"))
    v.push(`I1.14 an equipped run survives in ${after}`);
  const begins = event.type === "RUN_ANNOUNCED" || (event.type === "AGENT_START" && !previous);
  if (begins && next.status === "active") {
    if (!run || run === previous) v.push(`I1.14 ${event.type} began no fresh run actor`);
    else if (run.getSnapshot().context.equipped !== (after.startsWith("active") && !event.toolsMissing))
      v.push(`I1.14 a run began ${run.getSnapshot().context.equipped ? "equipped" : "ordinary"} in ${after}`);
    if (previous && previous.getSnapshot().status !== "stopped") v.push("I1.14 the previous run's actor kept running");
  }
  if (!begins && run && run !== previous) v.push(`I1.14 a run actor appeared on ${event.type}`);
  if (event.type === "AGENT_START" && previous && run !== previous) v.push("I1.14 a continuation replaced the run");
  if (event.type === "xstate.done.actor.run" && run) v.push("I1.14 the run's end left it open");
  if (event.type === "xstate.done.actor.run" && next.context.specification !== event.output.specification)
    v.push("I1.14 the run's end did not keep the specification it left");
  // I1.21: an explicit start that succeeds answers once, a durable stop too; nothing else says either
  const said = (code: string) => step.emitted.filter((e) => e.type === "episode.notice" && e.code === code).length;
  const explicit = ["starting.fromOff", "starting.fromPassive", "starting.fromUnanchored"].includes(before);
  const startedNow = explicit && event.type === "xstate.done.actor.storage";
  if (said("started") !== (startedNow ? 1 : 0)) v.push(`I1.21 ${before} → ${after} said started ${said("started")}×`);
  const stoppedNow = before === "stopping" && after === "passive";
  if (said("stopped") !== (stoppedNow ? 1 : 0)) v.push(`I1.21 ${before} → ${after} said stopped ${said("stopped")}×`);
  // I1.20: the specification follows the selected branch point; every run's end records what is carried
  if (
    (startsSession || event.type === "TREE") &&
    next.status === "active" &&
    !isDeepStrictEqual(next.context.specification, specificationCarrying(event.carried))
  )
    v.push(`I1.20 ${event.type} left the specification ${JSON.stringify(next.context.specification)}`);
  const ran = event.type === "xstate.done.actor.run";
  if (stepWork.filter((w) => w === "record-carried").length !== (ran ? 1 : 0))
    v.push(
      `I1.20 ${event.type} recorded the carried requests ${stepWork.filter((w) => w === "record-carried").length}×`,
    );
  // I1.18: the missing tools are said once each time they go missing
  if (event.type === "TOOLS_SYNCED" && next.status === "active") {
    const said = step.emitted.filter((e) => e.type === "episode.notice" && e.code === "tools-missing");
    const newly = event.missing.length > 0 && prev.context.toolsMissing.length === 0;
    if (said.length !== (newly ? 1 : 0)) v.push(`I1.18 tools-missing said ${said.length}× (newly missing: ${newly})`);
    if (next.context.toolsMissing !== event.missing) v.push("I1.18 the missing tools were not kept");
  }
  if (!next.children.barrier && next.status === "active") v.push("I1.18 the episode runs without its barrier");
  // I1.19: a loaded branch only where one is bound; dropped at session_start; a load is kept elsewhere
  if (next.status === "active") {
    const loaded = next.context.loaded;
    if ((after === "off" || after.startsWith("failedClosed")) && loaded !== null)
      v.push(`I1.19 a branch stays loaded in ${after}`);
    if (startsSession && loaded !== null) v.push("I1.19 session_start kept the previous branch");
    const holds = !(after === "off" || after.startsWith("failedClosed"));
    if (event.type === "LOADED" && holds && loaded !== event.state) v.push(`I1.19 a load in ${after} was not kept`);
    if (
      event.type !== "LOADED" &&
      event.type !== "SESSION_START" &&
      holds &&
      before === after &&
      loaded !== prev.context.loaded
    )
      v.push(`I1.19 ${event.type} changed the loaded branch`);
  }
  // I1.10: SHUTDOWN closes the episode, at once or (a bound branch Pi never saved) once the discard has its result
  const bound = before.startsWith("active") || before === "passive";
  const discards = event.type === "SHUTDOWN" && event.unsaved === true && bound;
  if (prev.status === "done" && (changed || next.status !== "done")) v.push("I1.10 a closed episode changed");
  if (event.type === "SHUTDOWN" && !before.startsWith("discarding") && next.status !== "done" && !discards)
    v.push(`I1.10 SHUTDOWN from ${before} did not close the episode (${after})`);
  if (discards && !after.startsWith("discarding")) v.push(`I1.10 an unsaved SHUTDOWN from ${before} reached ${after}`);
  if (before.startsWith("discarding")) {
    const result = event.type === "xstate.done.actor.discard" || event.type === "xstate.error.actor.discard";
    if (result && next.status !== "done") v.push(`I1.10 the discard's result left the episode in ${after}`);
    if ((event.type === "SHUTDOWN" || event.type === "SESSION_START") && changed)
      v.push(`I1.10 ${event.type} interrupted the discard (${after})`);
  }
  // I1.22: only an unsaved bound branch is discarded, always by the discard actor; its removal is said exactly
  // where an explicit start or stop said the state is kept (a bootstrap, passive), its failure always
  if (!before.startsWith("discarding") && after.startsWith("discarding")) {
    if (!discards) v.push(`I1.22 discarding entered from ${before} on ${JSON.stringify(event)}`);
    const expected =
      before.startsWith("active.bootstrap") || before === "passive" ? "discarding.said" : "discarding.silent";
    if (after !== expected) v.push(`I1.22 an unsaved SHUTDOWN from ${before} entered ${after}, not ${expected}`);
    if (!emittedEffect(step, "discard-unsaved")) v.push(`I1.22 ${after} entered without the discard`);
  }
  if (emittedEffect(step, "discard-unsaved") && !after.startsWith("discarding"))
    v.push(`I1.22 a discard ran on ${before} → ${after}`);
  const removedSaid = before === "discarding.said" && event.type === "xstate.done.actor.discard" && !!event.output;
  if (said("unsaved-removed") !== (removedSaid ? 1 : 0))
    v.push(`I1.22 ${before} → ${after} on ${event.type} said unsaved-removed ${said("unsaved-removed")}×`);
  const failed = before.startsWith("discarding") && event.type === "xstate.error.actor.discard";
  if (said("unsaved-kept") !== (failed ? 1 : 0))
    v.push(`I1.22 ${before} → ${after} on ${event.type} said unsaved-kept ${said("unsaved-kept")}×`);
  return v;
}

/** `simple` false: shortest and edge paths only (a negative control whose defect every edge tour meets). */
function runSuite(machine: typeof episodeMachine, simple = true) {
  return runPathSuite<EpisodeMachineEvent, Trace, { autoStart: boolean }>(machine, {
    inputs: [{ autoStart: true }, { autoStart: false }],
    spec: (input) => ({
      events: () => allEvents,
      simpleEvents: () => (simple ? simpleEvents : []),
      maxSimplePaths: 16_000,
      // (in a bootstrap, whether a run is open too: only a run can end it)
      serializeState: (s) =>
        JSON.stringify(
          s.matches({ active: "bootstrap" }) ? [s.value, (s as EpisodeSnapshot).context.run !== null] : s.value,
        ),
      input,
    }),
    trace: () => ({ freshPhysicalSession: false, lastActive: null }),
    check: (step, trace, input) => checkEpisodeStep(step, trace, input.autoStart),
  });
}

describe("episode machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(episodeMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I1.1–I1.10 and I1.12–I1.15 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.shortest).toBeGreaterThan(10);
    expect(report.paths.simple).toBeGreaterThan(100);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions (each guarded branch separately), with the edge tours after runs", () => {
    // A continuation outside active needs a run open there, which only the tours' key tells apart.
    const tours = runEffectTours(episodeMachine).report;
    const uncovered = report.uncovered.filter((t) => tours.uncovered.includes(t));
    expect(() => assertFullCoverage({ ...report, uncovered })).not.toThrow();
    expect(report.uncovered).toEqual(["episode --AGENT_START [runOpen]--> (self)"]);
  });
});

/**
 * Serialized by what the run and restore effects leave behind as well as by state: an enabled run
 * (an open run), the retained pointer's kind and tool registration. The main suite's state-only
 * key merges these, so a `RUN_ANNOUNCED` self-loop or a retried restore never leads anywhere there.
 * Shortest paths and edge tours only: simple paths over this key are several times more.
 */
function runEffectTours(machine: typeof episodeMachine) {
  return runPathSuite<EpisodeMachineEvent, Trace, { autoStart: boolean }>(machine, {
    inputs: [{ autoStart: true }, { autoStart: false }],
    spec: (input) => ({
      events: () => allEvents,
      simpleEvents: () => [],
      serializeState: (s) => {
        const { context } = s as EpisodeSnapshot;
        const run = context.run !== null;
        return JSON.stringify([s.value, run, context.retained?.kind ?? null, context.toolsRegistered]);
      },
      input,
    }),
    trace: () => ({ freshPhysicalSession: false, lastActive: null }),
    check: (step, trace, input) => checkEpisodeStep(step, trace, input.autoStart),
  });
}

describe("episode machine (edge tours after runs and failed restores)", () => {
  const { report, violations, steps } = runEffectTours(episodeMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("the invariants hold after every step when a run or a retained pointer precedes each transition", () => {
    expect(report.paths.edge).toBeGreaterThan(report.paths.shortest);
    expect(violations, violations.join("\n")).toEqual([]);
  });
});

describe("episode negative controls", () => {
  it("a guard forced false leaves its transitions uncovered and the coverage check fails naming them", () => {
    const mutated = episodeMachine.provide({ guards: { autoStartNewSession: () => false } });
    const { report } = runSuite(mutated);
    expect(report.uncovered).toContain("episode --SESSION_START [autoStartNewSession]--> episode.starting.fresh");
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
  });

  it("I1.4 check catches a new session that consults inherited markers", () => {
    const mutated = episodeMachine.provide({ guards: { isNewSession: () => false } });
    const { violations } = runSuite(mutated);
    expect(violations.some((v) => v.startsWith("I1.4"))).toBe(true);
  });

  it("I1.4 check catches a fork bound to its parent's pointer instead of its own copy", () => {
    // The field failure: the parent's revision restored as if it were the fork's own.
    const mutated = episodeMachine.provide({
      guards: {
        restoredFork: () => false,
        restoredRevision: ({ event }) =>
          event.type === "xstate.done.actor.restore" && ["revision", "fork"].includes(event.output.kind),
      },
    });
    const { violations } = runSuite(mutated);
    expect(violations.some((v) => v.startsWith("I1.4"))).toBe(true);
  });

  it("I1.20 check catches a /tree that keeps the specification, and a run's end that records nothing", () => {
    const seedless = runSuite(episodeMachine.provide({ actions: { seedSpecification: () => {} } }), false).violations;
    expect(seedless.some((v) => v.startsWith("I1.20"))).toBe(true);
    const unrecorded = runSuite(episodeMachine.provide({ actions: { recordCarried: () => {} } }), false).violations;
    expect(unrecorded.some((v) => v.startsWith("I1.20"))).toBe(true);
  });

  it("I1.21 check catches a start or a stop that answers nothing", () => {
    for (const action of ["reportStarted", "reportStopped"]) {
      const { violations } = runSuite(episodeMachine.provide({ actions: { [action]: () => {} } }), false);
      expect(
        violations.some((v) => v.startsWith("I1.21")),
        action,
      ).toBe(true);
    }
  });

  it("I1.10/I1.22 check catches an unsaved shutdown closed without discarding, and a removal or failure unsaid", () => {
    const undiscarded = runSuite(episodeMachine.provide({ guards: { shutdownUnsaved: () => false } }), false);
    expect(undiscarded.violations.some((v) => v.startsWith("I1.10 an unsaved SHUTDOWN"))).toBe(true);
    for (const action of ["reportUnsavedRemoved", "reportUnsavedKept"]) {
      const { violations } = runSuite(episodeMachine.provide({ actions: { [action]: () => {} } }), false);
      expect(
        violations.some((v) => v.startsWith("I1.22")),
        action,
      ).toBe(true);
    }
  });

  it("I1.3 check catches autoStart applied to resumed sessions", () => {
    const mutated = episodeMachine.provide({ guards: { autoStartNewSession: ({ context }) => context.autoStart } });
    const { violations } = runSuite(mutated);
    expect(violations.some((v) => v.startsWith("I1.3"))).toBe(true);
    expect(violations.some((v) => v.startsWith("I1.2"))).toBe(true);
  });
});

describe("episode scenarios", () => {
  const run = (autoStart: boolean, events: EpisodeMachineEvent[]) => {
    const actor = createActor(episodeMachine, { input: { autoStart } });
    const notices: string[] = [];
    actor.on("episode.notice", (e) => notices.push(e.code));
    actor.start();
    for (const e of events) actor.send(e);
    const s = actor.getSnapshot();
    actor.stop();
    return { s, notices };
  };
  const rr = restored;

  it("a fork of an enabled branch starts as its own copy; of a stopped one, or one it can't copy, off, said", () => {
    const forkStart = { type: "SESSION_START", reason: "fork", branch: "marked" } as const;
    const copied = run(true, [forkStart, rr({ kind: "fork", revision: "p", copy: {} }), FORK_COPIED]);
    expect([episodeStateName(copied.s), copied.notices]).toEqual(["active.steady", ["forked"]]);
    const stopped = run(true, [forkStart, rr({ kind: "disabled", inherited: true })]);
    expect([episodeStateName(stopped.s), stopped.notices]).toEqual(["off", ["fork-off"]]);
    const gone = run(true, [forkStart, rr({ kind: "forkUnavailable", revision: "p", detail: "gone" })]);
    expect([episodeStateName(gone.s), gone.notices]).toEqual(["off", ["fork-unavailable"]]);
    const failed = run(true, [forkStart, rr({ kind: "fork", revision: "p", copy: {} }), STORAGE_FAILED]);
    expect([episodeStateName(failed.s), failed.notices]).toEqual(["off", ["fork-unavailable"]]);
    const plain = run(true, [{ type: "SESSION_START", reason: "fork", branch: "unmarked" }]);
    expect([episodeStateName(plain.s), plain.notices]).toEqual(["off", []]);
  });

  it("I1.22 an unsaved session's start is discarded at shutdown: said after an explicit start, not autoStart", () => {
    const startup = { type: "SESSION_START", reason: "startup", branch: "empty" } as const;
    const unsaved = { type: "SHUTDOWN", unsaved: true } as const;
    const explicit = run(false, [startup, { type: "START" }, STORAGE_READY, unsaved, DISCARD_REMOVED]);
    expect([episodeStateName(explicit.s), explicit.notices]).toEqual(["closed", ["started", "unsaved-removed"]]);
    const stopped = run(true, [startup, STORAGE_READY, { type: "STOP" }, STOP_PERSISTED, unsaved, DISCARD_REMOVED]);
    expect(stopped.notices, "a stop said the state is kept").toEqual(["stopped", "unsaved-removed"]);
    const automatic = run(true, [startup, STORAGE_READY, unsaved, DISCARD_REMOVED]);
    expect([episodeStateName(automatic.s), automatic.notices]).toEqual(["closed", []]);
    const failed = run(true, [startup, STORAGE_READY, unsaved, DISCARD_FAILED]);
    expect([episodeStateName(failed.s), failed.notices]).toEqual(["closed", ["unsaved-kept"]]);
    const held = run(false, [startup, { type: "START" }, STORAGE_READY, unsaved, DISCARD_NOTHING]);
    expect([episodeStateName(held.s), held.notices], "nothing removed, nothing to say").toEqual([
      "closed",
      ["started"],
    ]);
    // I1.10: the discard is not interrupted; a saved session (or a reload) closes at once, without one
    const waiting = run(false, [startup, { type: "START" }, STORAGE_READY, unsaved, { type: "SHUTDOWN" }, startup]);
    expect(episodeStateName(waiting.s)).toBe("discarding.said");
    performed.length = 0;
    const saved = run(false, [startup, { type: "START" }, STORAGE_READY, { type: "SHUTDOWN" }]);
    expect([episodeStateName(saved.s), performed.includes("discard-unsaved")]).toEqual(["closed", false]);
    const off = run(false, [startup, unsaved]);
    expect(episodeStateName(off.s), "I1.22 nothing bound, nothing to discard").toBe("closed");
  });

  it("I1.2 manual startup is read-only: a new session stays off without autoStart", () => {
    const { s } = run(false, [{ type: "SESSION_START", reason: "startup", branch: "empty" }]);
    expect(episodeStateName(s), "I1.2 manual startup must not initialize storage").toBe("off");
    expect(mayInitializeStorage(s)).toBe(false);
  });

  it("I1.6 stop → reload → start bootstraps once from the frozen handoff, then steady", () => {
    const { s } = run(false, [
      { type: "SESSION_START", reason: "startup", branch: "empty" },
      { type: "START" },
      STORAGE_READY,
      { type: "STOP" },
      { type: "SESSION_START", reason: "reload", branch: "marked" },
      rr({ kind: "passive" }),
      { type: "START" },
      STORAGE_READY,
    ]);
    expect(projectionMode(s), "I1.6 restart must bootstrap from the handoff").toBe("bootstrapHandoff");
    const a = createActor(episodeMachine, { input: { autoStart: false }, snapshot: s }).start();
    a.send(RUN_ANNOUNCED);
    a.send(RUN_NOT_ACCEPTED);
    expect(projectionMode(a.getSnapshot()), "I1.7 a run without an accepted answer keeps the bootstrap").toBe(
      "bootstrapHandoff",
    );
    a.send(RUN_ANNOUNCED);
    a.send(RUN_ACCEPTED);
    expect(projectionMode(a.getSnapshot()), "I1.7 one bootstrap run only").toBe("active");
    a.stop();
  });

  it("I1.8 STOP on an unproven branch fails visibly and keeps the branch fail-closed", () => {
    const { s, notices } = run(true, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      rr({ kind: "unproven", revision: "r-sel", reason: "unavailable" }),
      { type: "STOP" },
    ]);
    expect(episodeStateName(s)).toBe("failedClosed.unproven");
    expect(notices, "I1.8 stop must fail visibly").toContain("stop-refused-unproven");
  });

  it("a STOP with nothing to stop says why: never started (off) or already stopped (passive)", () => {
    const off = run(false, [{ type: "SESSION_START", reason: "startup", branch: "empty" }, { type: "STOP" }]);
    expect([episodeStateName(off.s), off.notices]).toEqual(["off", ["not-enabled"]]);
    const stopped = run(false, [
      { type: "SESSION_START", reason: "startup", branch: "empty" },
      { type: "START" },
      STORAGE_READY,
      { type: "STOP" },
      STOP_PERSISTED,
      { type: "STOP" },
    ]);
    expect(episodeStateName(stopped.s)).toBe("passive");
    expect(stopped.notices).toEqual(["started", "stopped", "already-stopped"]);
  });

  it("I1.17 an unanchored older entry fails closed; STOP is refused, START starts a fresh origin", () => {
    const unanchored = rr({ kind: "unanchored", members: ["config", "state"], detail: "why" });
    const { s, notices } = run(false, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      unanchored,
      { type: "STOP" },
    ]);
    expect(episodeStateName(s), "I1.17 never reduced to off").toBe("failedClosed.unanchored");
    expect(s.context.retained).toEqual({ kind: "unanchored", revision: null, detail: "why" });
    expect(notices).toEqual(["restore-unanchored", "stop-refused-unanchored"]);
    const failed = run(false, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      unanchored,
      { type: "START" },
      STORAGE_FAILED,
    ]);
    expect(episodeStateName(failed.s), "I1.17 a failed start stays failed closed").toBe("failedClosed.unanchored");
    expect(failed.s.context.retained).toEqual({ kind: "unanchored", revision: null, detail: "why" });
    expect(failed.notices).toContain("start-failed");
    const started = run(false, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      unanchored,
      { type: "START" },
      STORAGE_READY,
    ]);
    expect(projectionMode(started.s), "I1.17 the transcript migrates in one bootstrap run").toBe("bootstrapTranscript");
    expect(started.s.context.retained).toBeNull();
  });

  it("I1.17 check catches an unanchored older entry reduced to off", () => {
    const mutated = episodeMachine.provide({ guards: { restoredUnanchored: () => false } });
    const { violations } = runSuite(mutated);
    expect(violations.some((v) => v.startsWith("I1.17"))).toBe(true);
  });

  it("I1.9 lock-busy retains the revision and STOP retries restoration before disabling", () => {
    const { s } = run(false, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      rr({ kind: "lockBusy", revision: "r-sel" }),
      { type: "STOP" },
      rr({ kind: "revision", revision: "r-sel", skippedInvalid: 0 }),
    ]);
    expect(episodeStateName(s), "I1.9 the retried stop persists the disabled config first (I1.12)").toBe("stopping");
    const { s: done } = run(false, [
      { type: "SESSION_START", reason: "resume", branch: "marked" },
      rr({ kind: "lockBusy", revision: "r-sel" }),
      { type: "STOP" },
      rr({ kind: "revision", revision: "r-sel", skippedInvalid: 0 }),
      STOP_PERSISTED,
    ]);
    expect(episodeStateName(done), "I1.9 retried stop ends passive").toBe("passive");
  });

  it(
    "I1.13 a start on an active file-only branch adopts it into " +
      "Git and returns to exactly where it was, success or failure",
    () => {
      for (const outcome of ["xstate.done.actor.storage", "xstate.error.actor.storage"] as const) {
        const a = createActor(episodeMachine, { input: { autoStart: false } }).start();
        const notices: string[] = [];
        a.on("episode.notice", (e) => notices.push(e.code));
        a.send({ type: "SESSION_START", reason: "startup", branch: "unmarked" });
        a.send({ type: "START" });
        a.send(STORAGE_READY);
        expect(episodeStateName(a.getSnapshot())).toBe("active.bootstrap.fromTranscript");
        a.send({ type: "START" });
        expect(notices, "I1.13 the start answers; without git a second one changes nothing").toEqual([
          "started",
          "already-active",
        ]);
        a.send({ type: "START", adoptGit: true });
        expect(episodeStateName(a.getSnapshot())).toBe("starting.adopting");
        expect(isToolsActive(a.getSnapshot()), "I1.13 tools off while adopting").toBe(false);
        expect(performed.at(-1)).toBe("adopt-git");
        a.send(outcome === "xstate.done.actor.storage" ? STORAGE_READY : STORAGE_FAILED);
        expect(episodeStateName(a.getSnapshot()), `I1.13 ${outcome} returns to the bootstrap it left`).toBe(
          "active.bootstrap.fromTranscript",
        );
        expect(notices.at(-1)).toBe(outcome === "xstate.done.actor.storage" ? "adopted-into-git" : "adoption-failed");
        a.stop();
      }
    },
  );

  it("I1.13 check catches a silent adoption, and one started without git", () => {
    const silent = runSuite(episodeMachine.provide({ actions: { reportAdopted: () => undefined } }));
    expect(silent.violations.some((v) => v.startsWith("I1.13") && v.includes("without notice adopted-into-git"))).toBe(
      true,
    );
    // (a guard forced true multiplies the simple paths past their bound, so this one is a single checked step)
    const eager = createActor(episodeMachine.provide({ guards: { startAdoptsGit: () => true } }), {
      input: { autoStart: true },
    }).start();
    eager.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
    eager.send(STORAGE_READY);
    const prev = eager.getSnapshot();
    const emitted: AnyEventObject[] = [];
    eager.on("*", (e) => emitted.push(e));
    const event: EpisodeMachineEvent = { type: "START" };
    eager.send(event);
    const violations = checkEpisodeStep(
      { index: 2, prev, event, next: eager.getSnapshot(), taken: [], emitted },
      { freshPhysicalSession: false, lastActive: "active.steady" },
      true,
    );
    expect(
      violations.some(
        (v) => v.startsWith("I1.13 adoption entered from active.steady") && v.includes('{"type":"START"}'),
      ),
    ).toBe(true);
    eager.stop();
  });

  it("I1.12 a stop that cannot be persisted returns to where it was, visibly", () => {
    const { s, notices } = run(false, [
      { type: "SESSION_START", reason: "startup", branch: "unmarked" },
      { type: "START" },
      STORAGE_READY,
      { type: "STOP" },
      STOP_FAILED,
    ]);
    expect(episodeStateName(s), "I1.12 back to the bootstrap it was in").toBe("active.bootstrap.fromTranscript");
    expect(notices, "I1.12 the failure is reported").toContain("stop-failed");
    const { s: restarted } = run(false, [
      { type: "SESSION_START", reason: "startup", branch: "unmarked" },
      { type: "START" },
      STORAGE_READY,
      { type: "STOP" },
      STOP_PERSISTED,
      { type: "START" },
      STORAGE_READY,
      { type: "STOP" },
      STOP_FAILED,
    ]);
    expect(
      episodeStateName(restarted),
      "I1.12/I1.6 a failed stop during a restart keeps the handoff bootstrap, never the raw transcript",
    ).toBe("active.bootstrap.fromHandoff");
  });
});
