// A branch's publication over a real Git store and its durable record (the session's pending-record
// file in the repository's git dir): restart recovery reads it, settled() covers its writes, what a
// pending push says names its cause, and one bound branch has one generation asking its remote.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BranchPublication, gitPusher } from "../../runtime/branch-publication.ts";
import { openPublication, type RecordStore } from "../../runtime/publication.ts";
import { cwdKey } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { StateStore } from "../../storage/state-store.ts";
import { BLOCKED_URL, alive, blockingSsh, until, type BlockingSsh } from "../support/blocking-remote.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
const blocked: BlockingSsh[] = [];
const opened: BranchPublication[] = [];
afterEach(() => {
  for (const publication of opened.splice(0)) publication.close();
  for (const remote of blocked.splice(0)) remote.killLeft();
  temps.cleanup();
});

/** A Git store whose repository names `remote` as origin, with one started origin. */
async function gitStore(remote: string | ((home: string) => string), env: Record<string, string> = {}) {
  const home = temps.make("sf-pub-records-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, "");
  const gitEnv = { ...gitTestEnv(cfg), ...env };
  const root = join(home, "store");
  mkdirSync(root);
  git(root, gitEnv, "init", "-q");
  git(root, gitEnv, "remote", "add", "origin", typeof remote === "string" ? remote : remote(home));
  const cwd = join(home, "project");
  const sessionId = "11111111-2222-7333-8444-555555555555";
  const identity = { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-01-01T00-00-00-000Z_${sessionId}` };
  const store = new StateStore(await openStore({ root, env: gitEnv, initGit: true }), identity);
  const origin = await store.start(null, "turn-end");
  const port = store.store.publication!;
  const records: RecordStore = {
    read: () => port.readPending(identity.sessionKey),
    write: (record) => port.writePending(identity.sessionKey, record),
  };
  return { store, origin, port, records, sessionKey: identity.sessionKey };
}

function branchPublication() {
  const notices: string[] = [];
  const publication = new BranchPublication((m) => notices.push(m));
  opened.push(publication);
  return { publication, notices };
}

const missingRemote = (home: string) => join(home, "does-not-exist.git");

describe("BranchPublication over the durable record (real git)", () => {
  it("restart recovery takes the target the record names pending, not the branch's selected one", async () => {
    const { store, origin, port, sessionKey } = await gitStore(missingRemote);
    const { patches } = parsePatchSet({ session: { working: { n: 1 } } });
    const { runtime: later } = await store.commit(origin, patches, "state-flow: test");
    const owed = origin.pointer.revision;
    await port.writePending(sessionKey, { state: "pending", revision: owed, attempts: 2, lastError: "offline" });
    const { publication, notices } = branchPublication();
    await publication.open(later, port);
    expect(publication.pendingTarget).toBe(owed);
    // The remote cannot be asked: still owed, and what is said names why (the remote's error).
    await until(() => notices.length > 0, "the unanswered question to be said");
    expect(notices[0]).toMatch(new RegExp(`^State Flow: push of ${owed.slice(0, 12)} is pending \\(.*does-not-exist`));
    expect(notices[0]).not.toContain(`(${owed}`);
  });

  it("one bound branch has one generation: opening again asks nothing more; shutdown ends every question", async () => {
    const ssh = blockingSsh(temps.make("sf-pub-ssh-"));
    blocked.push(ssh);
    const env = { GIT_SSH_COMMAND: ssh.command, STATE_FLOW_REMOTE_TIMEOUT_MS: "600000" };
    const { origin, port } = await gitStore(BLOCKED_URL, env);
    const { publication } = branchPublication();
    await publication.open(origin, port);
    // the origin asked about in the background (the fetch waits for that answer: one remote process at a time)
    await until(() => ssh.contacts().length === 1, "the remote to be asked about the origin");
    await publication.open(origin, port); // a restore of the branch this generation already publishes
    publication.close(); // (the generation's shutdown)
    await until(() => ssh.contacts().every((c) => !alive(c.pid)), "shutdown to end every question to the remote");
    expect(ssh.contacts()).toHaveLength(1);
  });
});

describe("the publication driver's record writes (real git)", () => {
  it("settled() resolves once the record of the last result is written", async () => {
    const { store, origin, port, records, sessionKey } = await gitStore(missingRemote);
    const pub = await openPublication({
      policy: "transition",
      pusher: gitPusher(port.remote),
      records,
      selected: origin.pointer.revision,
    });
    await pub.settled();
    const { patches } = parsePatchSet({ session: { working: { n: 1 } } });
    const { runtime } = await store.commit(origin, patches, "state-flow: test");
    const revision = runtime.pointer.revision;
    expect(await pub.accepted(revision)).toMatchObject({ kind: "pending", revision });
    await pub.settled();
    expect(await port.readPending(sessionKey)).toEqual({
      state: "pending",
      revision,
      attempts: 1,
      lastError: expect.stringContaining("does-not-exist"),
    });
    pub.shutdown();
  });
});
