// restoreBranch over a real Git store: which cohort a branch's markers bind it to, what it says
// about checkpoints it had to skip, and a cohort the store accepted that the branch never recorded.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../core/cohort.ts";
import type { BranchHost } from "../../runtime/host.ts";
import { restoreBranch } from "../../runtime/restore-branch.ts";
import { cwdKey } from "../../store/layout.ts";
import { openStore } from "../../store/open-store.ts";
import { StateStore, type BranchRuntime } from "../../store/state-store.ts";
import { RecordingHost } from "../support/recording-host.ts";
import { TempDirs, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

async function storeWithTwoCohorts() {
  const cfg = join(temps.make(), "gitconfig");
  writeFileSync(cfg, "");
  const cwd = temps.make();
  const identity = {
    cwd,
    cwdKey: cwdKey(cwd),
    sessionId: "11111111-2222-7333-8444-555555555555",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  const store = new StateStore(await openStore({ root: temps.make(), env: gitTestEnv(cfg), initGit: true }), identity);
  const first = await store.start(null, "turn-end");
  const { patches } = parsePatchSet({ session: { working: { step: 2 } } });
  const { runtime: second } = await store.commit(first, patches, "state-flow: test");
  return { store, first, second, sessionId: identity.sessionId };
}

/** A recording host whose branch holds these checkpoints; `appended` is what the restore adds to it. */
function host(sessionId: string, revisions: string[]) {
  const h = new RecordingHost(sessionId);
  for (const revision of revisions) h.appendCheckpoint({ revision });
  const appended = () => h.entries.slice(revisions.length).map((e) => ("checkpoint" in e ? e.checkpoint : e));
  return { h, appended, notices: h.notices };
}

const context = (store: StateStore, h: BranchHost, sessionId: string) => ({
  store,
  host: h,
  sessionId,
  current: () => null,
  freeze: (_: BranchRuntime) => {
    throw new Error("no stop to complete here");
  },
});

describe("restoreBranch", () => {
  it("binds the newest valid checkpoint and names the newer one it skipped", async () => {
    const { store, second, sessionId } = await storeWithTwoCohorts();
    const { h, notices } = host(sessionId, [second.pointer.revision, "f".repeat(40)]);
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(outcome.result).toEqual({ kind: "revision", revision: second.pointer.revision, skippedInvalid: 1 });
    expect(outcome.runtime?.pointer).toEqual(second.pointer);
    expect(notices).toEqual([
      {
        level: "warning",
        message: expect.stringMatching(
          /not the newest checkpoint of this branch: 1 newer checkpoint entry could not be loaded \(ffffffff/,
        ),
      },
    ]);
  });

  it("reads the live cohort once when it holds the newest checkpoint; an older one is read by revision", async () => {
    const { store, first, second, sessionId } = await storeWithTwoCohorts();
    const reads: string[] = [];
    const backend = store.store;
    const loadCurrent = backend.loadCurrent.bind(backend);
    const loadRevision = backend.loadRevision.bind(backend);
    backend.loadCurrent = (...args) => (reads.push("current"), loadCurrent(...args));
    backend.loadRevision = (...args) => (reads.push("revision"), loadRevision(...args));
    const newest = await restoreBranch(context(store, host(sessionId, [second.pointer.revision]).h, sessionId));
    expect(newest.runtime?.view).toEqual(second.view);
    expect(reads.splice(0)).toEqual(["current"]);
    // A branch selected at an older cohort (/tree) is read at its revision, never passed off as the live one.
    const older = host(sessionId, [first.pointer.revision]);
    older.h.recordedRevisions = () => new Set([first.pointer.revision, second.pointer.revision]);
    const restored = await restoreBranch(context(store, older.h, sessionId));
    expect(restored.runtime?.view).toEqual(first.view);
    expect(reads).toEqual(["current", "revision"]);
  });

  it("records a cohort the store accepted on top of the branch's newest checkpoint, and restores it", async () => {
    const { store, first, second, sessionId } = await storeWithTwoCohorts();
    const { h, appended, notices } = host(sessionId, [first.pointer.revision]);
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(appended()).toEqual([{ revision: second.pointer.revision }]);
    expect(outcome.result).toMatchObject({ kind: "revision", revision: second.pointer.revision });
    expect(notices[0]?.message).toMatch(
      /the store had accepted it, but the session ended before this branch recorded it/,
    );
  });

  it("an unavailable file cohort fails closed with the store's reason as the detail", async () => {
    const { store, sessionId } = await storeWithTwoCohorts();
    const { h } = host(sessionId, [`file:${"0".repeat(64)}`]);
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(outcome.result).toMatchObject({
      kind: "unproven",
      reason: "unavailable",
      revision: `file:${"0".repeat(64)}`,
    });
    expect(outcome.result.kind === "unproven" && outcome.result.detail).toMatch(
      /^The file cohort file:0{64} is no longer available: this session's files no longer hold what it names/,
    );
  });

  it("restores nothing and says nothing for a branch without checkpoints", async () => {
    const { store, sessionId } = await storeWithTwoCohorts();
    const { h, notices } = host(sessionId, []);
    expect(await restoreBranch(context(store, h, sessionId))).toEqual({ result: { kind: "none" }, runtime: null });
    expect(notices).toEqual([]);
  });
});
