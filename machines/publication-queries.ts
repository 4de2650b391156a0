// What the runtime asks a publication actor's snapshot (machines/publication.ts, M3): its status for
// the person, whether an accepted cohort's caller waits for the push, what a RETRY can do, and what
// became of a target a caller waits for. Pure reads of the snapshot; no events are sent from here.
import type { SnapshotFrom } from "xstate";
import type { PushResult, publicationMachine } from "./publication.ts";

export type PublicationSnapshot = SnapshotFrom<typeof publicationMachine>;

export type PublicationStatus =
  | "file-only"
  | "local-only"
  | "off"
  | "recovering"
  | "idle"
  | "checking"
  | "queued"
  | "pushing"
  | "confirmed"
  | "pending"
  | "waiting"
  | "closed";
export function publicationStatus(s: PublicationSnapshot): PublicationStatus {
  if (s.matches("fileOnly")) return "file-only";
  if (s.matches("localOnly")) return "local-only";
  if (s.matches("off")) return "off";
  if (s.matches("closed")) return "closed";
  if (s.matches("recovering")) return "recovering";
  for (const k of ["idle", "checking", "queued", "pushing", "confirmed", "pending", "waiting"] as const)
    if (s.matches({ remote: k })) return k;
  return "idle";
}

/** Whether an accepted cohort's caller waits for its push (transition policy on the remote route). */
export function waitsForPush(s: PublicationSnapshot): boolean {
  return s.matches("remote") && s.context.policy === "transition";
}

/**
 * What a RETRY can do now: wait for the push in flight, wait for the remote's answer about a recovered
 * target (it pushes when needed), wait for a queued target's run end, push the pending target, or nothing.
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

/** How an accepted target is held now: pushing (its push is in flight), queued, or null (not held). */
export function heldAs(s: PublicationSnapshot, target: string): "pushing" | "queued" | null {
  if (s.context.inflight === target) return "pushing";
  return s.context.queued === target ? "queued" : null;
}

/**
 * What became of `target` for a caller that began waiting when the last result was `since`:
 * null while it is queued or in flight (also again, after a same-target restart); its own push
 * result when one arrived since; "superseded" when a newer target took its place; "closed" after
 * shutdown. A caller waits with `waitFor(actor, (s) => targetSettled(s, target, since) !== null)`.
 */
export function targetSettled(
  s: PublicationSnapshot,
  target: string,
  since: number,
): PushResult | "superseded" | "closed" | null {
  if (s.status !== "active") return "closed";
  if (heldAs(s, target) !== null) return null;
  // Held behind another machine's commits: what its caller learns is why (the record keeps it pending).
  if (s.matches({ remote: "waiting" }) && s.context.pending === target)
    return { seq: resultSeq(s), target, kind: "rejected", error: s.context.lastError ?? "" };
  const result = s.context.lastResult;
  return result !== null && result.seq > since && result.target === target ? result : "superseded";
}

/** The sequence number of the last result (a waiting caller's starting point for targetSettled). */
export function resultSeq(s: PublicationSnapshot): number {
  return s.context.lastResult?.seq ?? 0;
}

/** Whether an actor is still at work: recovering, asking the remote or pushing. */
export function isBusy(s: PublicationSnapshot): boolean {
  return (
    s.status === "active" &&
    (s.matches("recovering") || s.matches({ remote: "checking" }) || s.matches({ remote: "pushing" }))
  );
}
