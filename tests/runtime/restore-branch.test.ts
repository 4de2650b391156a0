// restoreBranch over a real Git store: which cohort a branch's markers bind it to, what it says
// about checkpoints it had to skip, and a cohort the store accepted that the branch never recorded.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import type { BranchHost } from "../../runtime/host.ts";
import { restoreBranch } from "../../runtime/restore-branch.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type BranchState } from "../../storage/state-store.ts";
import { RecordingHost } from "../support/recording-host.ts";
import type { BranchMarker } from "../../machines/restore.ts";
import { TempDirs, git, gitTestEnv, initRepo } from "../support/store-fixtures.ts";

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
  policy: "turn-end" as const,
  freeze: (_: BranchState) => {
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
    expect(appended()).toEqual([{ revision: second.pointer.revision, boundary: expect.any(Object) }]);
    expect(outcome.result).toMatchObject({ kind: "revision", revision: second.pointer.revision });
    expect(notices[0]?.message).toMatch(
      /the store had accepted it, but the session ended before this branch recorded it/,
    );
  });

  it("completes a durable stop the branch never recorded: its handoff and markers, said once", async () => {
    const { store, second, sessionId } = await storeWithTwoCohorts();
    const stopped = await store.publishConfig(second, { ...second.config, enabled: false }, "state-flow: stop");
    const { h, notices } = host(sessionId, [second.pointer.revision]);
    const frozen: string[] = [];
    await restoreBranch({
      ...context(store, h, sessionId),
      freeze: (runtime) => void frozen.push(runtime.pointer.revision),
    });
    expect(frozen, "the stop is completed (handoff and markers)").toEqual([stopped.pointer.revision]);
    expect(notices).toEqual([
      { level: "info", message: expect.stringMatching(/the stop at step \d+ .* it is recorded now/) },
    ]);
  });

  it("a publisher that died holding the lock keeps the pointer (lockBusy) and names the lock", async () => {
    const { store, second, sessionId } = await storeWithTwoCohorts();
    const dead = spawnSync(process.execPath, ["-e", ""]).pid; // a process of this host that has ended
    const owner = { pid: dead, host: hostname(), acquiredAt: new Date().toISOString(), generation: "g", token: "t" };
    writeFileSync(store.store.lockPath, JSON.stringify(owner));
    const { h, appended, notices } = host(sessionId, [second.pointer.revision]);
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(outcome).toEqual({ result: { kind: "lockBusy", revision: second.pointer.revision }, runtime: null });
    expect(appended()).toEqual([]);
    expect(notices).toEqual([
      { level: "warning", message: expect.stringContaining(`The State Flow publication lock ${store.store.lockPath}`) },
    ]);
    expect(notices[0]!.message).toMatch(/Its publication was interrupted\. Remove .* and retry/);
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

  // Spec 001 "Runtime ownership": "Older config/meta and state-bearing checkpoints remain read-only
  // compatibility input"; "Legacy checkpoint syntax and immutable targets undergo the same fallback checks".
  it("an older entry form's pointer restores, and the branch then records it in the current form, once", async () => {
    const { store, second, sessionId } = await storeWithTwoCohorts();
    const { h, appended, notices } = host(sessionId, []);
    const older: BranchMarker[] = [{ kind: "revision", revision: second.pointer.revision, legacy: true }];
    h.markers = () => [...older, ...RecordingHost.prototype.markers.call(h)];
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(outcome.result).toEqual({
      kind: "revision",
      revision: second.pointer.revision,
      skippedInvalid: 0,
      legacy: true,
    });
    expect(appended()).toEqual([{ revision: second.pointer.revision, boundary: expect.any(Object) }]);
    expect(notices).toEqual([
      { level: "info", message: expect.stringContaining("from an older State Flow checkpoint entry") },
    ]);
    const again = await restoreBranch(context(store, h, sessionId));
    expect(again.result).toEqual({ kind: "revision", revision: second.pointer.revision, skippedInvalid: 0 });
    expect(notices).toHaveLength(1);
  });

  // Spec 001: "an unanchored legacy semantic payload cannot be silently reduced to an ordinary-disabled marker".
  it("an unanchored older entry fails closed with a named reason, reading nothing", async () => {
    const { store, sessionId } = await storeWithTwoCohorts();
    const { h } = host(sessionId, []);
    h.markers = () => [{ kind: "disabled" }, { kind: "unanchored", members: ["config", "state"] }];
    const outcome = await restoreBranch(context(store, h, sessionId));
    expect(outcome).toEqual({
      result: {
        kind: "unanchored",
        members: ["config", "state"],
        detail: expect.stringContaining("an older form carrying config, state but no revision"),
      },
      runtime: null,
    });
  });

  // Spec 001 "Existing stores and migration": "revision-linked predecessor snapshots have a one-way restoration path".
  it("a predecessor's revision restores through the one-way path; the branch records its replacement", async () => {
    const f = await predecessor();
    const { h, appended, notices } = host(f.sessionId, [f.revision]);
    const outcome = await restoreBranch(context(f.store, h, f.sessionId));
    const head = git(f.dir, f.env, "rev-parse", "HEAD").trim();
    expect(outcome.result).toEqual({ kind: "revision", revision: head, skippedInvalid: 0 });
    expect(appended()).toEqual([{ revision: head, boundary: expect.any(Object) }]);
    expect(notices.map((n) => n.message)).toEqual([
      expect.stringContaining("migrated the legacy state.json"),
      expect.stringContaining("older version's state.json snapshot"),
    ]);
    const again = await restoreBranch(context(f.store, h, f.sessionId));
    expect(again.result).toEqual({ kind: "revision", revision: head, skippedInvalid: 0 });
    expect(notices, "once").toHaveLength(2);
  });

  it("an older store form that is this session's but cannot be restored is retained, not skipped", async () => {
    const f = await predecessor();
    writeFileSync(join(f.dir, "state.json"), "[1]\n"); // the live global state.json is no state document
    git(f.dir, f.env, "commit", "-q", "-am", "broken global");
    const { h } = host(f.sessionId, []);
    h.markers = () => [{ kind: "disabled" }, { kind: "revision", revision: f.revision }];
    const outcome = await restoreBranch(context(f.store, h, f.sessionId));
    expect(outcome.result).toMatchObject({ kind: "unproven", reason: "unavailable", revision: f.revision });
    expect(outcome.result.kind === "unproven" && outcome.result.detail).toMatch(
      /holds this session in an older State Flow store form, which could not be restored: state\.json is not a scope/,
    );
  });
});

/** A predecessor's Git store (spec 001: "An existing current state.json"): global and session state.json. */
async function predecessor() {
  const repo = initRepo(temps, "sf-restore-pred-");
  const cwd = temps.make();
  const sessionId = "11111111-2222-7333-8444-666666666666";
  const identity = { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-01-01T00-00-00-000Z_${sessionId}` };
  const session = scopeFiles("session", identity).dir;
  mkdirSync(join(repo.dir, session), { recursive: true });
  const state = (working: object) => JSON.stringify({ artifacts: {}, contract: {}, working, response: "" });
  writeFileSync(join(repo.dir, "state.json"), state({ g: 1 }));
  writeFileSync(join(repo.dir, session, "state.json"), state({ s: 1 }));
  git(repo.dir, repo.env, "add", "-A");
  git(repo.dir, repo.env, "commit", "-q", "-m", "predecessor");
  const revision = git(repo.dir, repo.env, "rev-parse", "HEAD").trim();
  const store = new StateStore(await openStore({ root: repo.dir, env: repo.env }), identity);
  return { ...repo, store, revision, sessionId };
}
