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

import { createActor, type InspectionEvent, type Observer } from "xstate";
import {
  isPushResult,
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
import type { GitPushResult } from "../store/git/git-backend.ts";

import type { PublicationPolicy } from "../core/codec.ts";
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

/** What pushes an existing commit (GitBackend.pushRevision). */
export interface Pusher {
  push(revision: string): Promise<GitPushResult>;
  /** Whether a publication remote is configured (GitBackend.publicationRemote() !== null); used by openPublication. */
  hasRemote?(): Promise<boolean>;
}

export type PublicationOutcome =
  | { readonly kind: "file-only" } // no Git: nothing to publish, no fake pending
  | { readonly kind: "kept-local"; readonly revision: string } // policy off
  | { readonly kind: "queued"; readonly revision: string } // turn-end: pushed at turn end
  | { readonly kind: "pushing"; readonly revision: string } // turn-end: async push started
  | { readonly kind: "idle" } // nothing queued
  | { readonly kind: "pushed"; readonly revision: string; readonly remote?: string }
  | { readonly kind: "local-only"; readonly revision: string } // no remote configured
  | { readonly kind: "pending"; readonly revision: string; readonly error: string } // push failed, kept for retry
  | { readonly kind: "unreachable"; readonly revision: string; readonly error: string } // target commit no longer exists locally
  | { readonly kind: "superseded"; readonly revision: string } // a newer target replaced this one
  | { readonly kind: "fenced" }; // result arrived after shutdown

/** The one small interface the runtime uses; implemented over the publication machine. */
export interface PublicationDriver {
  readonly policy: PublicationPolicy;
  /** The unconfirmed intent to persist (null = nothing unconfirmed). */
  readonly pending: PendingPublication | null;
  /** A cohort was accepted locally as `revision`. */
  accepted(revision: string): Promise<PublicationOutcome>;
  /** Turn end: starts the asynchronous push of the newest queued target (does not wait for it). */
  turnEnd(): PublicationOutcome;
  /** Pushes the existing pending target now (e.g. after restart); waits for the result. */
  retry(): Promise<PublicationOutcome>;
  /** Resolves when no push is in flight. */
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

/** createPublication with `remote` resolved from the pusher (GitBackend.publicationRemote()) when not given. */
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
  const policy = options.policy ?? DEFAULT_PUBLICATION_POLICY;
  const pusher = options.pusher;
  const actor = createActor(publicationMachine, {
    input: { policy, backend: pusher ? "git" : "file", remote: pusher !== null && (options.remote ?? true) },
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  // Effect plumbing only (no lifecycle): the push promises still running, and callers awaiting
  // the outcome of one target.
  const running = new Set<Promise<void>>();
  const waiters = new Set<Waiter>();
  // The machine announces every push it starts (including a restart of the same target); they run
  // once the event that started them has been reported (intent first, then the push).
  const announced: PushAnnounced[] = [];
  actor.on("publication.push", (push) => void announced.push(push));
  const stale = new Set<string>();
  actor.on("publication.stale", ({ target }) => void stale.add(target));
  actor.start();

  const snap = (): PublicationSnapshot => actor.getSnapshot();
  const isOpen = () => snap().status === "active";

  /**
   * Sends one event (the pushes it starts run from the emitted events); reports the intent change;
   * settles the waiters of a delivered result and of superseded or fenced targets.
   */
  function dispatch(
    event: PublicationEvent,
    delivered?: (stale: boolean, next: PublicationSnapshot) => PublicationOutcome,
  ): void {
    if (!isOpen()) return;
    const prev = snap();
    stale.clear();
    actor.send(event);
    const next = snap();
    if (next.status === "active" && !sameIntent(intentOf(prev.context), intentOf(next.context)))
      options.onPendingChange?.(intentOf(next.context));
    for (const push of announced.splice(0)) run(push.target, push.generation);
    const c = next.context;
    const live = (revision: string) => next.status === "active" && (c.queued === revision || c.inflight === revision);
    // A result settles its target's callers unless a push of that same target is in flight again
    // (a same-target restart): then they wait for that push, which reports to them in turn.
    if (delivered && isPushResult(event) && !(next.status === "active" && c.inflight === event.target))
      settle(event.target, delivered(stale.has(event.target), next));
    for (const waiter of [...waiters]) {
      if (next.status !== "active") settle(waiter.revision, { kind: "fenced" });
      else if (!live(waiter.revision)) settle(waiter.revision, { kind: "superseded", revision: waiter.revision });
    }
  }

  function settle(revision: string, outcome: PublicationOutcome): void {
    for (const waiter of [...waiters])
      if (waiter.revision === revision) {
        waiters.delete(waiter);
        waiter.resolve(outcome);
      }
  }

  /** Resolves with the outcome of `revision`'s push (or superseded/fenced); register BEFORE dispatching. */
  function outcomeOf(revision: string): Promise<PublicationOutcome> {
    return new Promise((resolve) => waiters.add({ revision, resolve }));
  }

  function run(target: string, generation: number): void {
    if (!pusher) return; // unreachable: only the remote route (which needs a pusher) pushes
    const p: Promise<void> = (async () => {
      let result: GitPushResult;
      try {
        result = await pusher.push(target);
      } catch (error) {
        result = { kind: "failed", detail: error instanceof Error ? error.message : String(error) };
      }
      report(target, generation, result);
    })().finally(() => running.delete(p));
    running.add(p);
  }

  /** Sends one push result as its event; the outcome is derived from the snapshots around it. */
  function report(target: string, generation: number, result: GitPushResult): void {
    if (!isOpen()) return settle(target, { kind: "fenced" });
    const event = resultEvent(target, generation, result);
    dispatch(event, (wasStale, next) => resultOutcome(event, result, wasStale, next));
  }

  if (options.restored) {
    // Sent directly: restoring starts no push, and the caller already persisted this intent.
    actor.send({
      type: "RESTORED_PENDING",
      target: options.restored.revision,
      attempts: options.restored.attempts,
      ...(options.restored.lastError === undefined ? {} : { error: options.restored.lastError }),
    });
    // A route that publishes nothing (file-only, no remote, off) drops the old intent: say so.
    if (!sameIntent(options.restored, intentOf(snap().context))) options.onPendingChange?.(intentOf(snap().context));
  }

  /** The outcome for routes that never publish, or null on the remote route. */
  function routeOutcome(revision: string | null): PublicationOutcome | null {
    switch (publicationStatus(snap())) {
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

  return {
    policy,
    get pending() {
      return isOpen() ? intentOf(snap().context) : null;
    },
    async accepted(revision) {
      const fixed = routeOutcome(revision);
      if (fixed) return fixed;
      const outcome = policy === "transition" ? outcomeOf(revision) : null;
      dispatch({ type: "ACCEPTED", target: revision });
      if (outcome) return outcome; // transition: resolves after this cohort's push result
      // turn-end: queued for its turn end, or already covered by its own push in flight
      return (
        routeOutcome(revision) ??
        (snap().context.inflight === revision ? { kind: "pushing", revision } : { kind: "queued", revision })
      );
    },
    turnEnd() {
      const fixed = routeOutcome(null);
      if (fixed) return fixed.kind === "fenced" ? { kind: "idle" } : fixed;
      dispatch({ type: "TURN_END" });
      const target = pushingTarget(snap());
      return target === null ? { kind: "idle" } : { kind: "pushing", revision: target };
    },
    async retry() {
      const fixed = routeOutcome(null);
      if (fixed) return fixed;
      const plan = retryPlan(snap());
      if (plan.kind === "await") return outcomeOf(plan.target);
      if (plan.kind === "queued") return { kind: "queued", revision: plan.target }; // waits for its turn end
      if (plan.kind === "idle") return { kind: "idle" };
      const outcome = outcomeOf(plan.target);
      dispatch({ type: "RETRY" });
      return outcome;
    },
    async settled() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    shutdown() {
      const intent = isOpen() ? intentOf(snap().context) : null;
      dispatch({ type: "SHUTDOWN" });
      return intent;
    },
  };
}

/** A Pusher over the Git backend (kept as a function so this module does not construct backends). */
export function gitPusher(git: {
  pushRevision(revision: string): Promise<GitPushResult>;
  publicationRemote?(): Promise<string | null>;
}): Pusher {
  const publicationRemote = git.publicationRemote?.bind(git);
  return {
    push: (revision) => git.pushRevision(revision),
    ...(publicationRemote ? { hasRemote: async () => (await publicationRemote()) !== null } : {}),
  };
}
