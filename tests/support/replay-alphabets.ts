// Event alphabets of the replays through a real Pi session (tests/adapters/pi/model-based-*.test.ts)
// for the machines whose path suites keep theirs local: the same shapes as tests/machines/*, with
// tool names a Pi session really has, so every allowed call has an effect the replay can see.
import type { AnyMachineSnapshot } from "xstate";
import { PATCH_TOOL, type BarrierContext, type BarrierEvent, type ToolCallRef } from "../../machines/barrier.ts";
import type {
  PublicationContext,
  PublicationEvent,
  PublicationInput,
  PublicationRecord,
  PushOutput,
  RemoteHasOutput,
} from "../../machines/publication.ts";

const batch = (...names: string[]): ToolCallRef[] => names.map((name, i) => ({ id: `c${i}`, name }));

/** The barrier's batch shapes: none, without patch_state, patch_state first, last, twice and between others. */
export const BARRIER_BATCHES: readonly ToolCallRef[][] = [
  batch(),
  batch("bash"),
  batch("bash", "write"),
  batch(PATCH_TOOL),
  batch(PATCH_TOOL, "read_state"),
  batch("read_state", PATCH_TOOL),
  batch(PATCH_TOOL, PATCH_TOOL),
  batch("bash", PATCH_TOOL, "write"),
];

/** A tool call id that belongs to no batch (I4.4: a call outside a batch is not decided). */
export const STRAY_CALL = "stray";

export function barrierEvents(s: AnyMachineSnapshot): BarrierEvent[] {
  const c = s.context as BarrierContext;
  return [
    ...BARRIER_BATCHES.map((calls) => ({ type: "BATCH", calls }) as const),
    ...c.calls.map((call) => ({ type: "TOOL_CALL", id: call.id }) as const),
    { type: "TOOL_CALL", id: STRAY_CALL },
    { type: "BATCH_END" },
  ];
}

export const barrierStateKey = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, (s.context as BarrierContext).calls.map((c) => c.name)]);

// ---- M3 publication ----------------------------------------------------------------------------

/** The revision a restart selected, in the generated paths (a replay names the branch's real one). */
export const SELECTED = "s0";

/**
 * The inputs State Flow really opens a publication with (BranchPublication.open): on Git it always
 * recovers from the session's record (selected: the branch's revision) and asks the remote first;
 * file-only there is nothing to recover. One per route: turn-end, transition and off with a remote,
 * turn-end without one (local-only, until a remote is added), and file-only.
 */
export const PUBLICATION_INPUTS: readonly PublicationInput[] = [
  { policy: "turn-end", backend: "git", remote: true, selected: SELECTED, ask: true },
  { policy: "transition", backend: "git", remote: true, selected: SELECTED, ask: true },
  { policy: "off", backend: "git", remote: true, selected: SELECTED, ask: true },
  { policy: "turn-end", backend: "git", remote: false, selected: SELECTED, ask: true },
  { policy: "turn-end", backend: "file", remote: false },
];

export type PublicationPathEvent =
  | PublicationEvent
  | { type: "xstate.done.actor.push"; output: PushOutput }
  | { type: "xstate.error.actor.push"; error: Error }
  | { type: "xstate.done.actor.remoteHas"; output: RemoteHasOutput }
  | { type: "xstate.error.actor.remoteHas"; error: Error }
  | { type: "xstate.done.actor.readRecord"; output: PublicationRecord | null }
  | { type: "xstate.error.actor.readRecord"; error: Error };

/** Every result each invoked actor can give (as tests/machines/publication.test.ts offers them). */
export const PUBLICATION_RESULTS: readonly PublicationPathEvent[] = [
  { type: "xstate.done.actor.push", output: { kind: "pushed", remote: "origin" } },
  { type: "xstate.done.actor.push", output: { kind: "local-only" } },
  { type: "xstate.done.actor.push", output: { kind: "unreachable", detail: "bad object" } },
  { type: "xstate.done.actor.push", output: { kind: "rejected", detail: "! [rejected] (fetch first)" } },
  { type: "xstate.error.actor.push", error: new Error("offline") },
  { type: "xstate.done.actor.remoteHas", output: { has: true } },
  { type: "xstate.done.actor.remoteHas", output: { has: false } },
  { type: "xstate.error.actor.remoteHas", error: new Error("no answer within 10 s") },
  { type: "xstate.done.actor.readRecord", output: null },
  { type: "xstate.done.actor.readRecord", output: { state: "pending", revision: "t0", attempts: 2, lastError: "x" } },
  { type: "xstate.done.actor.readRecord", output: { state: "settled", revision: SELECTED } },
  { type: "xstate.done.actor.readRecord", output: { state: "settled", revision: "older" } },
  { type: "xstate.error.actor.readRecord", error: new Error("invalid pending record") },
];

const runningIn = (type: string, s: AnyMachineSnapshot) =>
  type.endsWith(".push")
    ? s.matches({ remote: "pushing" })
    : type.endsWith(".remoteHas")
      ? s.matches({ remote: "checking" })
      : s.matches("recovering");

/** The machine suite's alphabet: a fresh target, the in-flight one again, the plain events, the results. */
export function publicationEvents(s: AnyMachineSnapshot): PublicationPathEvent[] {
  const c = s.context as PublicationContext;
  let fresh = 1;
  while ([c.queued, c.inflight, c.pending].includes(`t${fresh}`)) fresh++;
  return [
    { type: "ACCEPTED", target: `t${fresh}` },
    // ISS-2: the target whose push is in flight is accepted again (restored pending target + new cohort)
    ...(c.inflight ? [{ type: "ACCEPTED", target: c.inflight } as const] : []),
    { type: "RUN_END" },
    { type: "RETRY" },
    { type: "REMOTE_FOUND" },
    { type: "SHUTDOWN" },
    // The events forwarded to the sync machine (the remote route's child) and its answers, where they count
    // (elsewhere they change nothing): a reduced alphabet keeps the simple paths bounded.
    ...(s.matches({ remote: "idle" }) ? ([{ type: "SYNC" }, { type: "CHOOSE", side: "remote" }] as const) : []),
    ...(["idle", "confirmed", "waiting"].some((k) => s.matches({ remote: k }))
      ? [{ type: "JOINED", target: `t${fresh}` } as const]
      : []),
    ...(s.matches({ remote: "waiting" })
      ? ([
          { type: "SYNCED", standing: "ahead", head: "h1" },
          { type: "SYNCED", standing: "equal", head: "h1" },
          { type: "SYNCED", standing: "diverged", head: "h1" },
        ] as const)
      : []),
    ...(s.matches({ remote: "idle" }) || s.matches({ remote: "confirmed" })
      ? [{ type: "SYNCED", standing: "ahead", head: "h1" } as const]
      : []),
    // A done event is offered in every state (where its actor does not run it must change nothing, I3.8); an
    // error event only where its actor runs: xstate makes an error event no state handles the machine's own
    // error (status "error"), which a stopped actor's late failure never causes, since it never arrives.
    ...PUBLICATION_RESULTS.filter((e) => !e.type.startsWith("xstate.error.") || runningIn(e.type, s)),
  ];
}

export const publicationStateKey = (s: AnyMachineSnapshot) => {
  const c = s.context as PublicationContext;
  return JSON.stringify([
    s.value,
    c.policy,
    c.queued !== null,
    c.inflight !== null,
    c.pending !== null,
    c.selected !== null,
    c.record?.state ?? null,
  ]);
};
