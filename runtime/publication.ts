// Remote publication (spec 001 "Runtime ownership and Git publication"): the provider of the
// publication machine (machines/publication.ts), one actor per store generation. The machine owns
// every decision (route, queue, retries, restart recovery, what the durable record says); this
// module supplies its actors' implementations with `machine.provide({ actors })` (`push`,
// `remoteHas`, `readRecord` over the Git store), writes each record the machine announces, and
// answers callers from snapshots: a caller that must wait for a push (the transition policy)
// uses `waitFor` on the actor.
//
//   off        – accepted commits stay local;
//   turn-end   – (default) each accepted cohort replaces the queued target (newest only); the push
//                starts asynchronously when the Pi run ends;
//   transition – each accepted cohort is pushed synchronously.
//
// A local commit accepts the transition; a push failure is a pending publication (recorded in the
// session's durable record and recovered on restart), never a reason to regenerate or re-apply
// anything: retries push the existing accepted commit. No remote configured is local-only, not an
// error; file-only stores have nothing to publish.

import { createActor, fromPromise, waitFor, type ActorRefFrom, type InspectionEvent, type Observer } from "xstate";
import {
  pendingOf,
  publicationMachine,
  type PendingPublication,
  type PublicationInput,
  type PublicationRecord,
  type PushOutput,
  type PushRequest,
  type RemoteHasOutput,
} from "../machines/publication.ts";
import {
  heldAs,
  isBusy,
  publicationStatus,
  pushingTarget,
  resultSeq,
  retryPlan,
  targetSettled,
  waitsForPush,
  type PublicationSnapshot,
  type PublicationStatus,
} from "../machines/publication-queries.ts";
import type { Side, SyncArrival } from "../machines/sync.ts";
import type { GitPushResult, PendingRecord, RemoteAnswer } from "../storage/open-store.ts";
import { providedSync, syncNow, syncQuiet, syncView, watchArrivals, type SyncSide, type SyncView } from "./sync.ts";
import { syncLines } from "./sync-report.ts";

import type { PublicationPolicy } from "../storage/core/codec.ts";
export type { PendingPublication, PublicationPolicy };
export const DEFAULT_PUBLICATION_POLICY: PublicationPolicy = "turn-end";

/** What pushes an existing commit (PublicationRemote.pushRevision). */
export interface Pusher {
  /** Aborting `signal` kills the push (the actor shut down; the publication stays pending). */
  push(revision: string, signal?: AbortSignal): Promise<GitPushResult>;
  /** Whether a publication remote is configured (publicationRemote() !== null); used by openPublication. */
  hasRemote?(): Promise<boolean>;
  /**
   * Whether the remote already has `revision` (PublicationRemote.askRemote); never waits past its limit.
   * Aborting `signal` means the answer is no longer wanted.
   */
  ask?(revision: string, signal: AbortSignal): Promise<RemoteAnswer>;
}

/** The session's durable pending record (PublicationPort.readPending / writePending for one session). */
export interface RecordStore {
  read(): Promise<PendingRecord | null>;
  write(record: PendingRecord): Promise<void>;
}

export type PublicationOutcome =
  | { readonly kind: "file-only" } // no Git: nothing to publish, no fake pending
  | { readonly kind: "kept-local"; readonly revision: string } // policy off
  | { readonly kind: "queued"; readonly revision: string } // turn-end: pushed at the run's end
  // a recovered target: the remote is being asked whether it has it (pushed if not, in the background)
  | { readonly kind: "checking"; readonly revision: string }
  | { readonly kind: "pushing"; readonly revision: string } // turn-end: async push started
  | { readonly kind: "idle" } // nothing queued
  | { readonly kind: "pushed"; readonly revision: string; readonly remote?: string }
  | { readonly kind: "local-only"; readonly revision: string } // no remote configured
  | { readonly kind: "pending"; readonly revision: string; readonly error: string } // push failed, kept for retry
  // the target commit no longer exists locally
  | { readonly kind: "unreachable"; readonly revision: string; readonly error: string }
  | { readonly kind: "superseded"; readonly revision: string } // a newer target replaced this one
  // the remote holds commits this machine lacks: held until a sync joins the lines
  | { readonly kind: "held"; readonly revision: string; readonly error: string }
  | { readonly kind: "fenced" }; // result arrived after shutdown

/** The one small interface the runtime uses; implemented over the publication actor. */
/** Where publication stands, for the status report. */
export interface PublicationSummary {
  readonly status: PublicationStatus;
  /** The newest push that reached the remote in this session (its remote's name when git said it). */
  readonly lastPushed: { readonly revision: string; readonly remote: string | null } | null;
}

export interface PublicationDriver {
  readonly policy: PublicationPolicy;
  /** The pending publication (null = nothing pending). */
  readonly pending: PendingPublication | null;
  /** Where publication stands (the status report's remote line). */
  readonly summary: PublicationSummary;
  /**
   * A cohort was accepted locally as `revision`. Under transition policy it resolves with the push's
   * outcome, unless `wait` is false (activation: start returns once local state is established).
   */
  accepted(revision: string, options?: { readonly wait?: boolean }): Promise<PublicationOutcome>;
  /** The Pi run ended: starts the asynchronous push of the newest queued target (does not wait for it). */
  runEnd(): PublicationOutcome;
  /** Pushes the existing pending target now (e.g. after restart); waits for the result. */
  retry(): Promise<PublicationOutcome>;
  /** Resolves when no push (and no question to the remote, no recovery) is in flight. */
  settled(): Promise<void>;
  /** Fences this generation: running pushes and questions are stopped; returns what stays pending. */
  shutdown(): PendingPublication | null;
  /** Fetches and classifies now and waits for the sync to settle (null: not on the remote route). */
  /** Fetches and classifies now (`asked`: a person's /state-flow-sync, whose answer says what it found). */
  sync(asked?: boolean): Promise<SyncView | null>;
  /** The person's side for a conflicting scope (or every one); waits for the join it may start. */
  choose(side: Side, scope?: string): Promise<SyncView | null>;
  /** Where the sync stands (null: not on the remote route). */
  readonly syncView: SyncView | null;
  /** Resolves once nothing is in flight: no recovery, question or push, and no sync at work. */
  quiet(): Promise<void>;
}

export interface PublicationOptions {
  readonly policy?: PublicationPolicy;
  /** null for file-only stores. */
  readonly pusher: Pusher | null;
  /**
   * Whether the state repository has a publication remote (routes the machine to local-only when
   * false). Default true when a pusher is given: a push that then finds no remote switches the
   * machine to local-only. openPublication() fills it in from pusher.hasRemote().
   */
  readonly remote?: boolean;
  /** The pending publication a previous generation left, when the caller knows it (no record to read). */
  readonly restored?: PendingPublication | null;
  /**
   * Restart recovery from `records`: the revision the branch selected. The machine reads the record
   * (`recovering`): pending → that revision is pending; none or unreadable → the selected one,
   * unless the record names it settled.
   */
  readonly selected?: string | null;
  /** The durable record: read at recovery, written (in order) whenever the machine announces a change. */
  readonly records?: RecordStore;
  /**
   * Ask the remote (pusher.ask, in the background) whether it already has the recovered pending
   * target before pushing it: settled if it has, pushed if it lacks, pending with the cause if it
   * cannot be asked. Without it (or without pusher.ask) the target is pending at once.
   */
  readonly askRestored?: boolean;
  /** Called whenever the pending publication changes (each record the machine announces). */
  readonly onPendingChange?: (pending: PendingPublication | null) => void;
  /** Called when a record could not be written. */
  readonly onRecordError?: (error: unknown) => void;
  /** Fetch, classify, fast-forward and join (the sync machine's actors); null or absent: no sync. */
  readonly sync?: SyncSide | null;
  /** Called when a fast-forward or a join brought the remote's line in. */
  readonly onArrival?: (arrival: SyncArrival, joined: boolean) => void;
  /** Called with the sync's lines when it found a scope changed here and on another machine (once per finding). */
  readonly onConflict?: (lines: string[]) => void;
  /** Live inspection observer for the machine actor (adapters/inspect: FlowInspection.inspect). */
  readonly inspect?: Observer<InspectionEvent>;
  /**
   * Where the actor lives: spawned into the branch's actor system (the episode) when given, so one
   * system holds every actor of the branch; an actor of its own otherwise (tests of this module).
   */
  readonly spawn?: PublicationSpawner;
}

/** Spawns the publication actor of a store generation as a child of the branch's actor system. */
export type PublicationSpawner = (
  logic: typeof publicationMachine,
  input: PublicationInput,
) => ActorRefFrom<typeof publicationMachine>;

/** The machine with the actors that reach the store and the remote. */
function providedMachine(pusher: Pusher | null, records: RecordStore | undefined, sync: SyncSide | null) {
  return publicationMachine.provide({
    actors: {
      sync: providedSync(sync),
      // A failed push is the actor's error (onError); pushed, local-only and unreachable are its output.
      push: fromPromise<PushOutput, PushRequest>(async ({ input, signal }) => {
        if (!pusher) throw new Error("no Git store to push from");
        const result = await pusher.push(input.target, signal);
        if (result.kind === "failed") throw new Error(result.detail || "push failed");
        if (result.kind === "pushed") return { kind: "pushed", ...(result.remote ? { remote: result.remote } : {}) };
        if (result.kind === "unreachable") return { kind: "unreachable", detail: result.detail || "commit not found" };
        if (result.kind === "rejected")
          return { kind: "rejected", ...(result.detail ? { detail: result.detail } : {}) };
        return { kind: "local-only" };
      }),
      // No remote any more counts as lacking: the push then finds none too (local-only from then on).
      remoteHas: fromPromise<RemoteHasOutput, PushRequest>(async ({ input, signal }) => {
        if (!pusher?.ask) throw new Error("the remote cannot be asked");
        const answer = await pusher.ask(input.target, signal);
        if (answer.kind === "unanswered") throw new Error(answer.detail);
        return { has: answer.kind === "has" };
      }),
      readRecord: fromPromise<PublicationRecord | null, { selected: string }>(async () =>
        records ? records.read() : null,
      ),
    },
  });
}

/**
 * createPublication with `remote` resolved from the pusher (PublicationRemote.publicationRemote()) when not given;
 * resolves once restart recovery has read the record.
 */
export async function openPublication(options: PublicationOptions): Promise<PublicationDriver> {
  const remote =
    options.remote !== undefined || !options.pusher?.hasRemote ? options.remote : await options.pusher.hasRemote();
  const driver = new MachinePublication({ ...options, ...(remote === undefined ? {} : { remote }) });
  await driver.recovered();
  return driver;
}

export function createPublication(options: PublicationOptions): PublicationDriver {
  return new MachinePublication(options);
}

/** A push result's outcome for its target's caller (read from the snapshot after it). */
function settledOutcome(s: PublicationSnapshot, revision: string, since: number): PublicationOutcome {
  const settled = targetSettled(s, revision, since);
  if (settled === null || settled === "superseded") return { kind: "superseded", revision };
  if (settled === "closed") return { kind: "fenced" };
  switch (settled.kind) {
    case "pushed":
      return { kind: "pushed", revision, ...(settled.remote ? { remote: settled.remote } : {}) };
    case "failed":
      // pending, unless a newer accepted target took its place
      return pendingOf(s.context)?.revision === revision
        ? { kind: "pending", revision, error: settled.error ?? "push failed" }
        : { kind: "superseded", revision };
    case "local-only":
      return { kind: "local-only", revision };
    case "unreachable":
      return { kind: "unreachable", revision, error: settled.error ?? "commit not found" };
    case "rejected":
      return { kind: "held", revision, error: settled.error ?? "the remote holds commits this machine lacks" };
  }
}

/** The driver over one publication actor: sends events, answers from snapshots, writes records. */
class MachinePublication implements PublicationDriver {
  readonly policy: PublicationPolicy;
  private readonly options: PublicationOptions;
  private readonly actor: ActorRefFrom<typeof publicationMachine>;
  /** The record writes, in the order the machine announced them (each one whole, atomically). */
  private writes: Promise<void> = Promise.resolve();

  constructor(options: PublicationOptions) {
    this.options = options;
    this.policy = options.policy ?? DEFAULT_PUBLICATION_POLICY;
    const pusher = options.pusher;
    const logic = providedMachine(pusher, options.records, options.sync ?? null);
    const input: PublicationInput = {
      policy: this.policy,
      backend: pusher ? "git" : "file",
      remote: pusher !== null && (options.remote ?? true),
      restored: options.restored ?? null,
      selected: options.records ? (options.selected ?? null) : null,
      ask: options.askRestored === true && pusher?.ask !== undefined,
    };
    if (options.spawn) {
      // A spawned actor starts at once. Only a `restored` pending publication dropped by its route is
      // announced at the start, before any listener could hear it: a spawned one recovers from its record.
      if (options.restored) throw new Error("a spawned publication recovers from its record, not from `restored`");
      this.actor = options.spawn(logic, input);
      this.actor.on("publication.record", ({ record }) => this.record(record));
    } else {
      const own = createActor(logic, { input, ...(options.inspect ? { inspect: options.inspect } : {}) });
      own.on("publication.record", ({ record }) => this.record(record));
      this.actor = own.start();
    }
    const { onArrival, onConflict } = options;
    if (onArrival || onConflict)
      watchArrivals(this.actor, onArrival ?? (() => undefined), (view) => onConflict?.(syncLines(view)));
  }

  // A command waits for what runs first (a restart's recovery and question, a push, a background fetch), so
  // that its own fetch or choice meets a settled sync instead of being ignored by one at work.
  async sync(asked = false): Promise<SyncView | null> {
    if (!this.isOpen()) return null;
    await this.quiet();
    return syncNow(this.actor, { type: "SYNC", asked });
  }

  async choose(side: Side, scope?: string): Promise<SyncView | null> {
    if (!this.isOpen()) return null;
    await this.quiet();
    return syncNow(this.actor, { type: "CHOOSE", side, ...(scope === undefined ? {} : { scope }) });
  }

  /** Nothing in flight: no recovery, question or push, and no sync at work (what one starts is awaited too). */
  async quiet(): Promise<void> {
    for (let i = 0; i < 4; i++) {
      await this.settled();
      await syncQuiet(this.actor);
      if (!isBusy(this.snap())) return;
    }
  }

  get syncView(): SyncView | null {
    return this.isOpen() ? syncView(this.actor) : null;
  }

  get pending(): PendingPublication | null {
    return this.isOpen() ? pendingOf(this.snap().context) : null;
  }

  get summary(): PublicationSummary {
    const snapshot = this.snap();
    const last = snapshot.context.lastResult;
    return {
      status: publicationStatus(snapshot),
      lastPushed: last?.kind === "pushed" ? { revision: last.target, remote: last.remote ?? null } : null,
    };
  }

  /** Resolves once restart recovery has read the record. */
  async recovered(): Promise<void> {
    if (this.snap().status !== "active" || !this.snap().matches("recovering")) return;
    await waitFor(this.actor, (s) => s.status !== "active" || !s.matches("recovering"));
  }

  async accepted(revision: string, options?: { readonly wait?: boolean }): Promise<PublicationOutcome> {
    await this.recovered();
    await this.findRemote();
    const fixed = this.routeOutcome(revision);
    if (fixed) return fixed;
    const waits = options?.wait !== false && waitsForPush(this.snap());
    const since = resultSeq(this.snap());
    this.actor.send({ type: "ACCEPTED", target: revision });
    if (waits) return this.outcomeOf(revision, since); // transition: resolves after this cohort's push result
    // turn-end (or not waiting): queued for its run's end, or covered by its own push in flight
    return this.routeOutcome(revision) ?? { kind: heldAs(this.snap(), revision) ?? "queued", revision };
  }

  runEnd(): PublicationOutcome {
    const fixed = this.routeOutcome(null);
    if (fixed) return fixed.kind === "fenced" ? { kind: "idle" } : fixed;
    this.actor.send({ type: "RUN_END" });
    const target = pushingTarget(this.snap());
    return target === null ? { kind: "idle" } : { kind: "pushing", revision: target };
  }

  async retry(): Promise<PublicationOutcome> {
    if (this.snap().matches("recovering")) await this.recovered();
    const fixed = this.routeOutcome(null);
    if (fixed) return fixed;
    const plan = retryPlan(this.snap());
    const since = resultSeq(this.snap());
    if (plan.kind === "await") return this.outcomeOf(plan.target, since);
    if (plan.kind === "checking") return { kind: "checking", revision: plan.target }; // the answer decides
    if (plan.kind === "queued") return { kind: "queued", revision: plan.target }; // waits for its run's end
    if (plan.kind === "idle") return { kind: "idle" };
    this.actor.send({ type: "RETRY" });
    return this.outcomeOf(plan.target, since);
  }

  async settled(): Promise<void> {
    await waitFor(this.actor, (s) => !isBusy(s));
    await this.writes;
  }

  shutdown(): PendingPublication | null {
    const pending = this.pending;
    this.actor.send({ type: "SHUTDOWN" });
    return pending;
  }

  /** While local-only, a remote the user added since is reported, so this cohort is published. */
  private async findRemote(): Promise<void> {
    const pusher = this.options.pusher;
    if (publicationStatus(this.snap()) !== "local-only" || !pusher?.hasRemote) return;
    if (await pusher.hasRemote().catch(() => false)) this.actor.send({ type: "REMOTE_FOUND" });
  }

  private snap(): PublicationSnapshot {
    return this.actor.getSnapshot();
  }

  private isOpen(): boolean {
    return this.snap().status === "active";
  }

  /** The outcome of `revision`'s push (or superseded / fenced), once the snapshot settles it. */
  private async outcomeOf(revision: string, since: number): Promise<PublicationOutcome> {
    const s = await waitFor(this.actor, (next) => targetSettled(next, revision, since) !== null);
    return settledOutcome(s, revision, since);
  }

  /** One record the machine announced: reported, and written after the ones before it. */
  private record(record: PublicationRecord): void {
    const { records, onPendingChange, onRecordError } = this.options;
    const { state: _state, ...pending } = record;
    onPendingChange?.(record.state === "pending" ? (pending as PendingPublication) : null);
    if (!records) return;
    this.writes = this.writes.then(() => records.write(record)).catch((error: unknown) => onRecordError?.(error));
  }

  /** The outcome for routes that never publish, or null on the remote route. */
  private routeOutcome(revision: string | null): PublicationOutcome | null {
    switch (publicationStatus(this.snap())) {
      case "file-only":
        return { kind: "file-only" };
      case "closed":
        return { kind: "fenced" };
      case "off":
        return revision === null ? { kind: "idle" } : { kind: "kept-local", revision };
      case "local-only":
        return revision === null ? { kind: "idle" } : { kind: "local-only", revision };
      default:
        return null;
    }
  }
}
