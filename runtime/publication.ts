// Remote publication policy (spec 001 "Runtime ownership and Git publication") behind one small
// interface. The lifecycle lives in ONE statechart, machines/publication.ts; this driver only sends
// it events, runs exactly the pushes it announces (emitted `publication.push{target, generation}`)
// and translates each push result 1:1 into an event tagged with that target and generation; the
// machine decides what a result means. It holds no queue, pending or generation of its own: the
// intent and the outcomes it reports are derived from machine snapshots.
//
//   off        – accepted commits stay local;
//   turn-end   – (default) each accepted cohort replaces the queued target (newest only); the push
//                starts asynchronously at turn end;
//   transition – each accepted cohort is pushed synchronously.
//
// A local commit accepts the transition; a push failure is pending publication (the unconfirmed
// intent the caller persists in session meta and hands back on restart), never a reason to
// regenerate or re-apply anything: retries push the existing accepted commit. No remote configured
// is local-only, not an error; file-only stores have nothing to publish. A late push result never
// acknowledges a newer target, and shutdown fences the old generation (its late results are
// ignored).
//
// An intent restored after a restart may already be on the remote (another session pushed it, or
// this one did and ended before recording it). With `askRestored` the machine asks the remote
// first (emitted `publication.ask{target, generation}`): the driver runs that question in the
// background, so opening a publication never waits on the network, and reports the answer as an
// event fenced like a push result. Shutdown also kills a question still running.

import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import {
  isPushResult,
  type AskAnnounced,
  type RemoteAnswerEvent,
  pushingTarget,
  publicationMachine,
  publicationStatus,
  retryPlan,
  type PublicationContext,
  type PushAnnounced,
  type PublicationEvent,
  type PushResultEvent,
  type PublicationSnapshot,
} from "../machines/publication.ts";
import type { GitPushResult, RemoteAnswer } from "../storage/open-store.ts";

import type { PublicationPolicy } from "../storage/core/codec.ts";
import { errorMessage } from "../storage/core/errors.ts";
export type { PublicationPolicy };
export const DEFAULT_PUBLICATION_POLICY: PublicationPolicy = "turn-end";

/** The unconfirmed publication intent. Persist it (session meta.json) whenever it changes. */
export interface PendingPublication {
  /** The existing accepted commit to push. */
  readonly revision: string;
  /** Failed attempts so far (0 = queued, not yet attempted). */
  readonly attempts: number;
  readonly lastError?: string;
}

/** What pushes an existing commit (PublicationRemote.pushRevision). */
export interface Pusher {
  /** Aborting `signal` kills the push (the runtime shut down; the intent stays owed). */
  push(revision: string, signal?: AbortSignal): Promise<GitPushResult>;
  /** Whether a publication remote is configured (publicationRemote() !== null); used by openPublication. */
  hasRemote?(): Promise<boolean>;
  /**
   * Whether the remote already has `revision` (PublicationRemote.askRemote); never waits past its limit.
   * Aborting `signal` means the answer is no longer wanted.
   */
  ask?(revision: string, signal: AbortSignal): Promise<RemoteAnswer>;
}

export type PublicationOutcome =
  | { readonly kind: "file-only" } // no Git: nothing to publish, no fake pending
  | { readonly kind: "kept-local"; readonly revision: string } // policy off
  | { readonly kind: "queued"; readonly revision: string } // turn-end: pushed at turn end
  // a restored target: the remote is being asked whether it has it (pushed if not, in the background)
  | { readonly kind: "checking"; readonly revision: string }
  | { readonly kind: "pushing"; readonly revision: string } // turn-end: async push started
  | { readonly kind: "idle" } // nothing queued
  | { readonly kind: "pushed"; readonly revision: string; readonly remote?: string }
  | { readonly kind: "local-only"; readonly revision: string } // no remote configured
  | { readonly kind: "pending"; readonly revision: string; readonly error: string } // push failed, kept for retry
  // the target commit no longer exists locally
  | { readonly kind: "unreachable"; readonly revision: string; readonly error: string }
  | { readonly kind: "superseded"; readonly revision: string } // a newer target replaced this one
  | { readonly kind: "fenced" }; // result arrived after shutdown

/** The one small interface the runtime uses; implemented over the publication machine. */
export interface PublicationDriver {
  readonly policy: PublicationPolicy;
  /** The unconfirmed intent to persist (null = nothing unconfirmed). */
  readonly pending: PendingPublication | null;
  /**
   * A cohort was accepted locally as `revision`. Under transition policy it resolves with the push's
   * outcome, unless `wait` is false (activation: start returns once local state is established).
   */
  accepted(revision: string, options?: { readonly wait?: boolean }): Promise<PublicationOutcome>;
  /** Turn end: starts the asynchronous push of the newest queued target (does not wait for it). */
  turnEnd(): PublicationOutcome;
  /** Pushes the existing pending target now (e.g. after restart); waits for the result. */
  retry(): Promise<PublicationOutcome>;
  /** Resolves when no push (and no question to the remote) is in flight. */
  settled(): Promise<void>;
  /** Fences this generation: in-flight and later results are ignored; returns the intent to persist. */
  shutdown(): PendingPublication | null;
}

export interface PublicationOptions {
  readonly policy?: PublicationPolicy;
  /** null for file-only stores. */
  readonly pusher: Pusher | null;
  /**
   * Whether the state repository has a publication remote (routes the machine to local-only when
   * false). Default true when a pusher is given: a push that then finds no remote switches the
   * machine to local-only (PUSH_LOCAL_ONLY). openPublication() fills it in from pusher.hasRemote().
   */
  readonly remote?: boolean;
  /** The intent persisted by a previous generation (restart). */
  readonly restored?: PendingPublication | null;
  /**
   * Ask the remote (pusher.ask, in the background) whether it already has the restored intent
   * before pushing it: settled if it has, pushed if it lacks, pending with the cause if it cannot be
   * asked. Without it (or without pusher.ask) the restored intent is pending at once.
   */
  readonly askRestored?: boolean;
  /** Called whenever the intent to persist changes. */
  readonly onPendingChange?: (pending: PendingPublication | null) => void;
  /** Live inspection observer for the machine actor (adapters/inspect: FlowInspection.inspect). */
  readonly inspect?: Observer<InspectionEvent>;
}

/** The intent to persist, derived from the machine: the newest unconfirmed accepted target. */
export function intentOf(context: PublicationContext): PendingPublication | null {
  const revision = context.queued ?? context.inflight ?? context.pending;
  if (revision === null) return null;
  if (revision !== context.pending) return { revision, attempts: 0 };
  return {
    revision,
    attempts: context.attempts,
    ...(context.lastError === null ? {} : { lastError: context.lastError }),
  };
}

function sameIntent(a: PendingPublication | null | undefined, b: PendingPublication | null): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b);
}

/** createPublication with `remote` resolved from the pusher (PublicationRemote.publicationRemote()) when not given. */
export async function openPublication(options: PublicationOptions): Promise<PublicationDriver> {
  if (options.remote !== undefined || !options.pusher?.hasRemote) return createPublication(options);
  return createPublication({ ...options, remote: await options.pusher.hasRemote() });
}

type Waiter = { readonly revision: string; readonly resolve: (outcome: PublicationOutcome) => void };

/** One push result, translated 1:1 (no lifecycle decision: the machine's guards make those). */
function resultEvent(target: string, generation: number, result: GitPushResult): PushResultEvent {
  switch (result.kind) {
    case "pushed":
      return { type: "PUSH_OK", target, generation };
    case "failed":
      return { type: "PUSH_FAILED", target, generation, error: result.detail || "push failed" };
    case "local-only":
      return { type: "PUSH_LOCAL_ONLY", target, generation };
    case "unreachable":
      return { type: "PUSH_UNREACHABLE", target, generation, error: result.detail || "commit not found" };
  }
}

/** One answer of the remote about a restored target, translated 1:1. */
function answerEvent(target: string, generation: number, answer: RemoteAnswer): RemoteAnswerEvent {
  switch (answer.kind) {
    case "has":
      return { type: "REMOTE_HAS", target, generation };
    // No remote any more: the push finds none too and reports PUSH_LOCAL_ONLY (local-only from then on).
    case "lacks":
    case "local-only":
      return { type: "REMOTE_LACKS", target, generation };
    case "unanswered":
      return { type: "REMOTE_UNANSWERED", target, generation, error: answer.detail };
  }
}

/**
 * What one push result meant for its target: superseded when the machine announced it stale,
 * otherwise read from the snapshot after its event.
 */
function resultOutcome(
  event: PushResultEvent,
  result: GitPushResult,
  stale: boolean,
  next: PublicationSnapshot,
): PublicationOutcome {
  const revision = event.target;
  if (stale) return { kind: "superseded", revision };
  switch (event.type) {
    case "PUSH_OK":
      return {
        kind: "pushed",
        revision,
        ...(result.kind === "pushed" && result.remote ? { remote: result.remote } : {}),
      };
    case "PUSH_FAILED":
      // kept as the intent to persist, unless a newer accepted target took its place
      return intentOf(next.context)?.revision === revision
        ? { kind: "pending", revision, error: event.error ?? "push failed" }
        : { kind: "superseded", revision };
    case "PUSH_LOCAL_ONLY":
      return { kind: "local-only", revision };
    case "PUSH_UNREACHABLE":
      return { kind: "unreachable", revision, error: event.error ?? "commit not found" };
  }
}

export function createPublication(options: PublicationOptions): PublicationDriver {
  return new MachinePublication(options);
}

/** The driver over one publication actor. Effect plumbing only: every lifecycle decision is the machine's. */
class MachinePublication implements PublicationDriver {
  readonly policy: PublicationPolicy;
  private readonly options: PublicationOptions;
  private readonly pusher: Pusher | null;
  private readonly actor: Actor<typeof publicationMachine>;
  /** The push promises still running. */
  private readonly running = new Set<Promise<void>>();
  /** Callers awaiting the outcome of one target. */
  private readonly waiters = new Set<Waiter>();
  // The machine announces every push it starts (including a restart of the same target); they run
  // once the event that started them has been reported (intent first, then the push).
  private readonly announced: PushAnnounced[] = [];
  /** Targets whose result the machine announced as not counted, during the current dispatch. */
  private readonly stale = new Set<string>();
  /** Questions to the remote the machine announced; they run once the event that started them was reported. */
  private readonly asks: AskAnnounced[] = [];
  /**
   * Aborted at shutdown: a question or push still running is killed. Its result would be fenced
   * anyway, and a live child would keep Pi's process from exiting (print mode waited for a hung
   * push's whole limit). The intent stays owed: the next runtime asks the remote again.
   */
  private readonly remoteWork = new AbortController();

  constructor(options: PublicationOptions) {
    this.options = options;
    this.policy = options.policy ?? DEFAULT_PUBLICATION_POLICY;
    this.pusher = options.pusher;
    const remote = this.pusher !== null && (options.remote ?? true);
    this.actor = createActor(publicationMachine, {
      input: { policy: this.policy, backend: this.pusher ? "git" : "file", remote },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    this.actor.on("publication.push", (push) => void this.announced.push(push));
    this.actor.on("publication.stale", ({ target }) => void this.stale.add(target));
    this.actor.on("publication.ask", (ask) => void this.asks.push(ask));
    this.actor.start();
    if (options.restored) this.restore(options.restored);
  }

  get pending(): PendingPublication | null {
    return this.isOpen() ? intentOf(this.snap().context) : null;
  }

  async accepted(revision: string, options?: { readonly wait?: boolean }): Promise<PublicationOutcome> {
    await this.findRemote();
    const fixed = this.routeOutcome(revision);
    if (fixed) return fixed;
    const outcome = this.policy === "transition" && options?.wait !== false ? this.outcomeOf(revision) : null;
    this.dispatch({ type: "ACCEPTED", target: revision });
    if (outcome) return outcome; // transition: resolves after this cohort's push result
    // turn-end (or not waiting): queued for its turn end, or covered by its own push in flight
    return (
      this.routeOutcome(revision) ??
      (this.snap().context.inflight === revision ? { kind: "pushing", revision } : { kind: "queued", revision })
    );
  }

  turnEnd(): PublicationOutcome {
    const fixed = this.routeOutcome(null);
    if (fixed) return fixed.kind === "fenced" ? { kind: "idle" } : fixed;
    this.dispatch({ type: "TURN_END" });
    const target = pushingTarget(this.snap());
    return target === null ? { kind: "idle" } : { kind: "pushing", revision: target };
  }

  async retry(): Promise<PublicationOutcome> {
    const fixed = this.routeOutcome(null);
    if (fixed) return fixed;
    const plan = retryPlan(this.snap());
    if (plan.kind === "await") return this.outcomeOf(plan.target);
    if (plan.kind === "checking") return { kind: "checking", revision: plan.target }; // the answer decides
    if (plan.kind === "queued") return { kind: "queued", revision: plan.target }; // waits for its turn end
    if (plan.kind === "idle") return { kind: "idle" };
    const outcome = this.outcomeOf(plan.target);
    this.dispatch({ type: "RETRY" });
    return outcome;
  }

  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  shutdown(): PendingPublication | null {
    const intent = this.isOpen() ? intentOf(this.snap().context) : null;
    this.dispatch({ type: "SHUTDOWN" });
    this.remoteWork.abort();
    return intent;
  }

  /** While local-only, a remote the user added since is reported, so this cohort is published. */
  private async findRemote(): Promise<void> {
    if (publicationStatus(this.snap()) !== "local-only" || !this.pusher?.hasRemote) return;
    if (await this.pusher.hasRemote().catch(() => false)) this.dispatch({ type: "REMOTE_FOUND" });
  }

  private snap(): PublicationSnapshot {
    return this.actor.getSnapshot();
  }

  private isOpen(): boolean {
    return this.snap().status === "active";
  }

  /** The intent a previous generation persisted; sent directly: restoring starts no push. */
  private restore(restored: PendingPublication): void {
    this.actor.send({
      type: "RESTORED_PENDING",
      target: restored.revision,
      attempts: restored.attempts,
      ...(restored.lastError === undefined ? {} : { error: restored.lastError }),
      ask: this.options.askRestored === true && this.pusher?.ask !== undefined,
    });
    for (const ask of this.asks.splice(0)) this.ask(ask.target, ask.generation);
    // A route that publishes nothing (file-only, no remote, off) drops the old intent: say so.
    const intent = intentOf(this.snap().context);
    if (!sameIntent(restored, intent)) this.options.onPendingChange?.(intent);
  }

  /**
   * Sends one event (the pushes it starts run from the emitted events); reports the intent change;
   * settles the waiters of a delivered result and of superseded or fenced targets.
   */
  private dispatch(
    event: PublicationEvent,
    delivered?: (stale: boolean, next: PublicationSnapshot) => PublicationOutcome,
  ): void {
    if (!this.isOpen()) return;
    const prev = this.snap();
    this.stale.clear();
    this.actor.send(event);
    const next = this.snap();
    const open = next.status === "active";
    if (open && !sameIntent(intentOf(prev.context), intentOf(next.context)))
      this.options.onPendingChange?.(intentOf(next.context));
    for (const push of this.announced.splice(0)) this.run(push.target, push.generation);
    for (const ask of this.asks.splice(0)) this.ask(ask.target, ask.generation);
    // A result settles its target's callers unless a push of that same target is in flight again
    // (a same-target restart): then they wait for that push, which reports to them in turn.
    if (delivered && isPushResult(event) && !(open && next.context.inflight === event.target))
      this.settle(event.target, delivered(this.stale.has(event.target), next));
    this.settleDropped(next);
  }

  /** Callers of a target the machine no longer holds learn it was superseded (or fenced at shutdown). */
  private settleDropped(next: PublicationSnapshot): void {
    const { queued, inflight } = next.context;
    for (const waiter of [...this.waiters]) {
      if (next.status !== "active") this.settle(waiter.revision, { kind: "fenced" });
      else if (queued !== waiter.revision && inflight !== waiter.revision)
        this.settle(waiter.revision, { kind: "superseded", revision: waiter.revision });
    }
  }

  private settle(revision: string, outcome: PublicationOutcome): void {
    for (const waiter of [...this.waiters])
      if (waiter.revision === revision) {
        this.waiters.delete(waiter);
        waiter.resolve(outcome);
      }
  }

  /** Resolves with the outcome of `revision`'s push (or superseded/fenced); register BEFORE dispatching. */
  private outcomeOf(revision: string): Promise<PublicationOutcome> {
    return new Promise((resolve) => this.waiters.add({ revision, resolve }));
  }

  private run(target: string, generation: number): void {
    const pusher = this.pusher;
    if (!pusher) return; // unreachable: only the remote route (which needs a pusher) pushes
    const p: Promise<void> = (async () => {
      let result: GitPushResult;
      try {
        result = await pusher.push(target, this.remoteWork.signal);
      } catch (error) {
        result = { kind: "failed", detail: errorMessage(error) };
      }
      this.report(target, generation, result);
    })().finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /**
   * Asks the remote about a restored target in the background. The answer is sent as its event,
   * where the machine's generation and target fences decide whether it still counts; after
   * shutdown it is dropped here (the machine is closed).
   */
  private ask(target: string, generation: number): void {
    const ask = this.pusher?.ask?.bind(this.pusher);
    if (!ask) return; // unreachable: RESTORED_PENDING asks only when the pusher can
    const p: Promise<void> = (async () => {
      let answer: RemoteAnswer;
      try {
        answer = await ask(target, this.remoteWork.signal);
      } catch (error) {
        answer = { kind: "unanswered", detail: errorMessage(error) };
      }
      if (this.isOpen()) this.dispatch(answerEvent(target, generation, answer));
    })().finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Sends one push result as its event; the outcome is derived from the snapshot after it. */
  private report(target: string, generation: number, result: GitPushResult): void {
    if (!this.isOpen()) return this.settle(target, { kind: "fenced" });
    const event = resultEvent(target, generation, result);
    this.dispatch(event, (wasStale, next) => resultOutcome(event, result, wasStale, next));
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

/** A Pusher over the Git backend (kept as a function so this module does not construct backends). */
export function gitPusher(git: {
  pushRevision(revision: string, signal?: AbortSignal): Promise<GitPushResult>;
  publicationRemote?(): Promise<string | null>;
  /** Changes whenever the repository's config file does (null: unknown, ask git). */
  configStamp?(): Promise<string | null>;
  askRemote?(revision: string, signal?: AbortSignal): Promise<RemoteAnswer>;
}): Pusher {
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
