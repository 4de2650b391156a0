// Remote publication policy (spec 001 "Runtime ownership and Git publication") behind one small
// interface, so the XState publication machine can drive it later without changing callers.
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

import type { GitPushResult } from "./git-backend.ts";

export type PublicationPolicy = "off" | "turn-end" | "transition";
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

/** The one small interface the runtime uses (and a future machine-backed driver implements). */
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
  /** The intent persisted by a previous generation (restart). */
  readonly restored?: PendingPublication | null;
  /** Called whenever the intent to persist changes. */
  readonly onPendingChange?: (pending: PendingPublication | null) => void;
}

interface Target {
  readonly seq: number;
  readonly revision: string;
  attempts: number;
  lastError?: string;
}

export function createPublication(options: PublicationOptions): PublicationDriver {
  const policy = options.policy ?? DEFAULT_PUBLICATION_POLICY;
  const pusher = options.pusher;
  let seq = 0;
  let target: Target | null = null;
  let fenced = false;
  let inflight: Promise<PublicationOutcome> | null = null;

  if (options.restored && pusher) {
    target = { seq: ++seq, revision: options.restored.revision, attempts: options.restored.attempts };
    if (options.restored.lastError !== undefined) target.lastError = options.restored.lastError;
  }

  const snapshot = (): PendingPublication | null =>
    target === null
      ? null
      : { revision: target.revision, attempts: target.attempts, ...(target.lastError === undefined ? {} : { lastError: target.lastError }) };

  const notify = () => {
    if (!fenced) options.onPendingChange?.(snapshot());
  };

  async function pushOnce(t: Target): Promise<PublicationOutcome> {
    if (!pusher) return { kind: "file-only" };
    let result: GitPushResult;
    try {
      result = await pusher.push(t.revision);
    } catch (error) {
      result = { kind: "failed", detail: error instanceof Error ? error.message : String(error) };
    }
    if (fenced) return { kind: "fenced" };
    const current = target !== null && target.seq === t.seq;
    switch (result.kind) {
      case "pushed":
        if (!current) return { kind: "superseded", revision: t.revision }; // never acknowledges the newer target
        target = null;
        notify();
        return { kind: "pushed", revision: t.revision, ...(result.remote ? { remote: result.remote } : {}) };
      case "local-only":
        if (current) {
          target = null;
          notify();
        }
        return { kind: "local-only", revision: t.revision };
      case "unreachable":
        if (current) {
          target = null; // a reset made the target unreachable: report once, do not retry forever
          notify();
        }
        return { kind: "unreachable", revision: t.revision, error: result.detail ?? "commit not found" };
      case "failed":
        if (!current) return { kind: "superseded", revision: t.revision };
        t.attempts += 1;
        t.lastError = result.detail ?? "push failed";
        notify();
        return { kind: "pending", revision: t.revision, error: t.lastError };
    }
  }

  /** Pushes the newest target; if a newer one was queued meanwhile, pushes that too. */
  function pushNewest(): Promise<PublicationOutcome> {
    if (inflight) return inflight.then(() => (target && !fenced ? pushNewest() : { kind: "idle" } as const));
    const t = target;
    if (!t) return Promise.resolve({ kind: "idle" });
    const run = pushOnce(t).finally(() => {
      inflight = null;
    });
    inflight = run;
    return run;
  }

  return {
    policy,
    get pending() {
      return snapshot();
    },
    async accepted(revision) {
      if (!pusher) return { kind: "file-only" };
      if (policy === "off") return { kind: "kept-local", revision };
      target = { seq: ++seq, revision, attempts: 0 };
      notify();
      if (policy === "turn-end") return { kind: "queued", revision };
      // transition: synchronous push of this cohort (after any in-flight push)
      if (inflight) await inflight.catch(() => undefined);
      if (target?.revision !== revision) return { kind: "superseded", revision };
      return pushNewest();
    },
    turnEnd() {
      if (!pusher) return { kind: "file-only" };
      if (fenced || target === null) return { kind: "idle" };
      const revision = target.revision;
      void pushNewest();
      return { kind: "pushing", revision };
    },
    async retry() {
      if (!pusher) return { kind: "file-only" };
      if (fenced) return { kind: "fenced" };
      return pushNewest();
    },
    async settled() {
      while (inflight) await inflight.catch(() => undefined);
    },
    shutdown() {
      const intent = snapshot();
      fenced = true;
      return intent;
    },
  };
}

/** A Pusher over the Git backend (kept as a function so this module does not construct backends). */
export function gitPusher(git: { pushRevision(revision: string): Promise<GitPushResult> }): Pusher {
  return { push: (revision) => git.pushRevision(revision) };
}
