// The publication actor's snapshot, as the runtime reads it: a live actor (its push and remote
// question stubbed through `provide`, settled by the test) walked through a push, a queued newer
// target, a failure, a retry and a shutdown, each query checked at every step.
import { describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import {
  publicationMachine,
  type PublicationInput,
  type PublicationRecord,
  type PushOutput,
  type PushRequest,
  type RemoteHasOutput,
} from "../../machines/publication.ts";
import {
  heldAs,
  isBusy,
  publicationStatus,
  pushingTarget,
  resultSeq,
  retryPlan,
  targetSettled,
  waitsForPush,
} from "../../machines/publication-queries.ts";

type Deferred<T> = { resolve: (v: T) => void; reject: (e: Error) => void };

function started(input: PublicationInput) {
  const pushes: Deferred<PushOutput>[] = [];
  const asks: Deferred<RemoteHasOutput>[] = [];
  const machine = publicationMachine.provide({
    actors: {
      push: fromPromise<PushOutput, PushRequest>(
        () => new Promise((resolve, reject) => pushes.push({ resolve, reject })),
      ),
      remoteHas: fromPromise<RemoteHasOutput, PushRequest>(
        () => new Promise((resolve, reject) => asks.push({ resolve, reject })),
      ),
      readRecord: fromPromise<PublicationRecord | null, { selected: string }>(async () => null),
    },
  });
  return { actor: createActor(machine, { input }).start(), pushes, asks };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("publication queries", () => {
  it("follow a push, a newer target queued behind it, a failure, a retry and a shutdown", async () => {
    const { actor, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
    const s = () => actor.getSnapshot();
    expect([publicationStatus(s()), waitsForPush(s()), isBusy(s()), resultSeq(s())]).toEqual(["idle", false, false, 0]);
    expect(retryPlan(s())).toEqual({ kind: "idle" });

    actor.send({ type: "ACCEPTED", target: "c1" });
    expect(heldAs(s(), "c1"), "accepted under turn-end: queued until the run ends").toBe("queued");
    expect(retryPlan(s())).toEqual({ kind: "queued", target: "c1" });
    expect(targetSettled(s(), "c1", 0)).toBeNull();

    actor.send({ type: "RUN_END" });
    expect([publicationStatus(s()), pushingTarget(s()), heldAs(s(), "c1"), isBusy(s())]).toEqual([
      "pushing",
      "c1",
      "pushing",
      true,
    ]);
    expect(retryPlan(s())).toEqual({ kind: "await", target: "c1" });

    actor.send({ type: "ACCEPTED", target: "c2" });
    expect(pushingTarget(s()), "a newer target queued behind the push is what it serves").toBe("c2");
    expect(heldAs(s(), "c2")).toBe("queued");

    const since = resultSeq(s());
    pushes[0]!.reject(new Error("offline"));
    await tick();
    expect(targetSettled(s(), "c1", since), "c1's own result").toMatchObject({ target: "c1", kind: "failed" });
    expect(targetSettled(s(), "c2", since), "c2 is still held").toBeNull();

    actor.send({ type: "RUN_END" });
    pushes[1]!.reject(new Error("offline"));
    await tick();
    expect(publicationStatus(s())).toBe("pending");
    expect(targetSettled(s(), "c2", since)).toMatchObject({ target: "c2", kind: "failed" });
    expect(resultSeq(s())).toBeGreaterThan(since);
    expect(retryPlan(s())).toEqual({ kind: "push", target: "c2" });

    actor.send({ type: "RETRY" });
    pushes[2]!.resolve({ kind: "pushed" });
    await tick();
    expect(publicationStatus(s())).toBe("confirmed");
    expect(targetSettled(s(), "c2", since)).toMatchObject({ target: "c2", kind: "pushed" });

    actor.send({ type: "SHUTDOWN" });
    expect([publicationStatus(s()), isBusy(s()), targetSettled(s(), "c2", since)]).toEqual(["closed", false, "closed"]);
  });

  it("under the transition policy a caller waits for the push; file-only and local-only stores have none", () => {
    const transition = started({ policy: "transition", backend: "git", remote: true }).actor;
    expect(waitsForPush(transition.getSnapshot())).toBe(true);
    transition.stop();
    const fileOnly = started({ policy: "transition", backend: "file", remote: true }).actor;
    expect([publicationStatus(fileOnly.getSnapshot()), waitsForPush(fileOnly.getSnapshot())]).toEqual([
      "file-only",
      false,
    ]);
    fileOnly.stop();
    const local = started({ policy: "turn-end", backend: "git", remote: false }).actor;
    expect(publicationStatus(local.getSnapshot())).toBe("local-only");
    local.stop();
  });

  it("a restored target is checked against the remote first, then pushed only when it lacks it", async () => {
    const { actor, asks, pushes } = started({
      policy: "turn-end",
      backend: "git",
      remote: true,
      restored: { revision: "c9", attempts: 1 },
      selected: "c9",
      ask: true,
    });
    await tick();
    const s = () => actor.getSnapshot();
    expect([publicationStatus(s()), isBusy(s()), retryPlan(s())]).toEqual([
      "checking",
      true,
      { kind: "checking", target: "c9" },
    ]);
    asks[0]!.resolve({ has: false });
    await tick();
    expect([publicationStatus(s()), pushes.length, retryPlan(s()), pushingTarget(s())]).toEqual([
      "pushing",
      1,
      { kind: "await", target: "c9" },
      "c9",
    ]);
    actor.stop();
  });
});
