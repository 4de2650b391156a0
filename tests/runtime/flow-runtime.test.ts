// The runtime without Pi: a small host that keeps a branch as an array of checkpoint markers
// drives FlowRuntime over a real store (Git in a temp repository, and file-only), through start,
// an enabled run, stop, a restart from a fresh runtime and a failed-closed restore. What Pi adds
// (messages, tools, the footer) is covered by tests/adapters/pi; here the point is that every
// lifecycle step works with nothing of Pi loaded.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { FlowRuntime } from "../../runtime/flow-runtime.ts";
import type { SessionIdentity } from "../../runtime/session-identity.ts";
import { cwdKey } from "../../storage/layout.ts";
import type { RunTrigger } from "../../machines/specification.ts";
import { BLOCKED_URL, alive, blockingSsh, until, type BlockingSsh } from "../support/blocking-remote.ts";
import { RecordingHost } from "../support/recording-host.ts";
import { git as gitIn, gitTestEnv } from "../support/store-fixtures.ts";

const dirs: string[] = [];
const blocked: BlockingSsh[] = [];
/** Runtimes of the blocked-remote tests: shut down even when a test failed before it did (its questions end). */
const opened: FlowRuntime[] = [];
const prompt = (text: string): RunTrigger => ({ kind: "prompt", text });
afterEach(() => {
  for (const runtime of opened.splice(0)) runtime.shutdown();
  for (const remote of blocked.splice(0)) remote.killLeft();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), "sf-runtime-"));
  dirs.push(dir);
  return dir;
}

interface WorldOptions {
  readonly env?: Record<string, string>;
  readonly autoStart?: boolean;
  readonly policy?: "turn-end" | "transition";
}

function world(git: boolean, { env: extraEnv = {}, autoStart = false, policy = "turn-end" }: WorldOptions = {}) {
  const root = join(temp(), "store");
  const cfg = join(temp(), "gitconfig");
  writeFileSync(cfg, "");
  const env = { ...(git ? gitTestEnv(cfg) : { ...gitTestEnv(cfg), PATH: temp() }), ...extraEnv };
  const cwd = temp();
  const identity: SessionIdentity = {
    cwd,
    cwdKey: cwdKey(cwd),
    sessionId: "11111111-2222-7333-8444-555555555555",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  const open = (host: RecordingHost, moreEnv: Record<string, string> = {}) =>
    new FlowRuntime(host, {
      storeRoot: root,
      knowledgeRoot: join(temp(), "knowledge"),
      env: { ...env, ...moreEnv },
      autoStart,
      remotePublication: policy,
      diagnostics: { agentDir: temp(), enabled: false },
      inspection: undefined,
    });
  return { root, env, identity, open };
}

/**
 * A Git world whose store publishes to a remote that really blocks: git reaches it through an ssh
 * command that never answers. `limit` is the remote commands' limit (STATE_FLOW_REMOTE_TIMEOUT_MS).
 */
function blockedWorld(limit: number, options: Omit<WorldOptions, "env"> = {}) {
  const ssh = blockingSsh(temp());
  blocked.push(ssh);
  const w = world(true, {
    env: { GIT_SSH_COMMAND: ssh.command, STATE_FLOW_REMOTE_TIMEOUT_MS: String(limit) },
    ...options,
  });
  mkdirSync(w.root, { recursive: true });
  gitIn(w.root, w.env, "init", "-q");
  gitIn(w.root, w.env, "remote", "add", "origin", BLOCKED_URL);
  const record = join(w.root, ".git", "state-flow", "pending", `${w.identity.sessionKey}.json`);
  const pending = () =>
    existsSync(record) ? (JSON.parse(readFileSync(record, "utf8")) as Record<string, unknown>) : null;
  const open = (host: RecordingHost, moreEnv: Record<string, string> = {}) => {
    const runtime = w.open(host, moreEnv);
    opened.push(runtime);
    return runtime;
  };
  return { ...w, open, ssh, pending };
}

for (const git of [true, false]) {
  describe(`FlowRuntime without Pi (${git ? "Git" : "file-only"} store)`, () => {
    it(
      "starts, runs an enabled run to an accepted answer, " + "stops, and restores passive in a fresh runtime",
      async () => {
        const { identity, open } = world(git);
        const host = new RecordingHost(identity.sessionId);
        const runtime = open(host);
        await runtime.sessionStart("startup", identity, "empty");
        expect(runtime.episodeName()).toBe("off");
        expect(host.registered, "an ordinary session registers no tools").toBe(0);

        await runtime.command("start");
        expect(runtime.episodeName()).toBe("active.bootstrap.fromTranscript");
        expect(host.registered).toBe(1);
        expect(host.view).toMatchObject({ toolsActive: true, toolsRegistered: true, footer: { detail: "#0" } });

        expect(runtime.runAnnounced(prompt("remember the plan"))).toBe(true);
        const projection = runtime.projection();
        expect(projection).toMatchObject({
          mode: "bootstrap",
          specification: { request: "remember the plan", added: [], startedBy: null },
          resolution: { eligible: false },
        });
        await runtime.patchState(parsePatchSet({ session: { working: { plan: "A" } }, final: true }));
        expect(runtime.projection()).toMatchObject({ resolution: { eligible: true } });
        runtime.draft({ id: 1, ending: "complete", text: "Plan A.", stopReason: "stop" });
        await runtime.turnEnd();
        runtime.runEnded();
        expect(runtime.episodeName(), "the first accepted run ends the bootstrap").toBe("active.steady");
        expect(runtime.read(0, "session").state.response).toBe("Plan A.");
        expect(runtime.read(0, "session").state.working).toEqual({ plan: "A" });

        await runtime.command("stop");
        expect(runtime.episodeName()).toBe("passive");
        expect(host.view?.toolsActive).toBe(false);
        const markers = host.markers();
        expect(markers.at(-1)).toEqual({ kind: "disabled", stoppedBy: identity.sessionId });
        runtime.shutdown();

        const reopened = open(host);
        await reopened.sessionStart("resume", identity, "marked");
        expect(reopened.episodeName(), "this session's stop restores the frozen boundary").toBe("passive");
        expect(reopened.read(0, "session").state.response).toBe("Plan A.");
        await reopened.command("start");
        expect(reopened.episodeName()).toBe("active.bootstrap.fromHandoff");
        reopened.shutdown();
      },
    );

    it("steers an unresolved answer twice, then gives up with one error and keeps the branch enabled", async () => {
      const { identity, open } = world(git);
      const host = new RecordingHost(identity.sessionId);
      const runtime = open(host);
      await runtime.sessionStart("startup", identity, "empty");
      await runtime.command("start");
      expect(runtime.runAnnounced(prompt("answer without a patch"))).toBe(true);
      for (let id = 1; id <= 3; id++)
        runtime.draft({ id, ending: "complete", text: `draft ${id}`, stopReason: "stop" });
      expect(host.steers).toEqual([1, 2]);
      expect(host.notices.filter((n) => n.level === "error").map((n) => n.message)).toEqual([
        expect.stringMatching(
          /did not accept the answer: after 3 attempts the model still answered without calling patch_state/,
        ),
      ]);
      const projection = runtime.projection();
      expect(projection.mode === "bootstrap" && [...projection.discarded]).toEqual([1, 2, 3]);
      expect(host.discardedDrafts, "each discard is recorded on the branch too").toEqual([1, 2, 3]);
      runtime.runEnded();
      expect(runtime.episodeName()).toBe("active.bootstrap.fromTranscript");
      expect(runtime.runAnnounced(prompt("next run")), "a new run gets a fresh resolution").toBe(true);
      expect(runtime.projection()).toMatchObject({ resolution: { eligible: false, steers: 0 }, discarded: new Set() });
      runtime.shutdown();
    });

    it("a run the host cannot give State Flow's tools runs ordinary: no resolution, said once", async () => {
      const { identity, open } = world(git);
      const host = new RecordingHost(identity.sessionId);
      host.withheldTools = ["patch_state", "read_state"];
      const runtime = open(host);
      await runtime.sessionStart("startup", identity, "empty");
      await runtime.command("start");
      const said = () => host.notices.filter((n) => n.message.includes("its tools are not active"));
      expect(said()).toHaveLength(1);
      expect(runtime.runAnnounced(prompt("first"))).toBe(false);
      expect(runtime.projection()).toEqual({ mode: "ordinary" });
      runtime.draft({ id: 1, ending: "complete", text: "plain", stopReason: "stop" });
      runtime.userMessage("a follow-up");
      expect(host.steers, "nothing is resolved, so nothing is steered").toEqual([]);
      runtime.runEnded();
      expect(runtime.status()).toContain("tools NOT active: patch_state, read_state");

      host.withheldTools = [];
      expect(runtime.runAnnounced(prompt("second")), "the tools are back: an enabled run again").toBe(true);
      expect(runtime.projection().mode).toBe("bootstrap");
      expect(said()).toHaveLength(1);
      runtime.shutdown();
    });

    it("fails closed on a branch whose only checkpoint the store cannot prove, and the status says why", async () => {
      const { identity, open } = world(git);
      const host = new RecordingHost(identity.sessionId);
      const missing = git ? "0".repeat(40) : `file:${"0".repeat(64)}`;
      host.appendCheckpoint({ revision: missing });
      const runtime = open(host);
      await runtime.sessionStart("resume", identity, "marked");
      expect(runtime.episodeName()).toMatch(/^failedClosed\./);
      expect(host.view).toMatchObject({
        toolsActive: false,
        toolsRegistered: false,
        footer: { detail: "unavailable" },
      });
      expect(runtime.status()).toMatch(/runtime: unavailable — /);
      expect(runtime.projection(), "no transcript, no state").toEqual({ mode: "closed" });
      expect(runtime.inputRefusal()).toMatch(
        /^State Flow did not run this prompt: it is failed closed on this branch because it cannot prove .*\/tree/,
      );
      await runtime.command("stop");
      expect(host.notices.at(-1)?.message).toMatch(/cannot stop: this branch's provenance is unproven/);
      runtime.shutdown();
    });
  });
}

describe("activation never waits on the network (a remote that really blocks)", () => {
  it(
    "start, and a resume that owes the remote a push, return while the remote blocks; " + "shutdown kills the question",
    async () => {
      const { identity, open, ssh } = blockedWorld(600_000); // a limit no test reaches
      const host = new RecordingHost(identity.sessionId);
      const runtime = open(host);
      await runtime.sessionStart("startup", identity, "empty");
      await runtime.command("start");
      expect(runtime.episodeName()).toBe("active.bootstrap.fromTranscript");
      await until(() => ssh.contacts().length === 1, "the remote to be asked, in the background");
      const [asked] = ssh.contacts();
      expect(alive(asked!.pid), "start returned; the remote has not answered").toBe(true);
      expect(runtime.status()).toMatch(/pending [0-9a-f]{40}/); // owed until the remote answers
      runtime.shutdown();
      await until(() => !alive(asked!.pid), "shutdown to kill the question");

      const resumed = open(host);
      await resumed.sessionStart("resume", identity, "marked");
      expect(resumed.episodeName(), "the branch is restored").toBe("active.steady");
      await until(() => ssh.contacts().length === 2, "the resumed runtime to ask the remote");
      const again = ssh.contacts()[1]!;
      expect(alive(again.pid), "the resume returned; the remote has not answered").toBe(true);
      expect(again).toMatchObject({ terminalPrompt: "0", gcmInteractive: "never" });
      expect(again.args).toMatch(/^-o BatchMode=yes /);
      resumed.shutdown();
      await until(() => !alive(again.pid), "shutdown to kill the question");
      expect(host.notices.filter((n) => n.level !== "info")).toEqual([]);
    },
  );

  it(
    "a remote that does not answer within the limit is a pending publication naming that cause, " + "kept on resume",
    async () => {
      const { identity, open, ssh, pending } = blockedWorld(1000);
      const host = new RecordingHost(identity.sessionId);
      const runtime = open(host);
      await runtime.sessionStart("startup", identity, "empty");
      await runtime.command("start");
      const cause = /the remote origin did not answer within 1 s, so git ls-remote was stopped/;
      await until(() => host.notices.some((n) => cause.test(n.message)), "the unanswered question to be said");
      expect(host.notices.at(-1)?.message).toMatch(/^State Flow: push of [0-9a-f]{12} is pending \(the remote origin/);
      await until(() => pending()?.state === "pending", "the pending record");
      expect(pending()).toMatchObject({ state: "pending", attempts: 0, lastError: expect.stringMatching(cause) });
      await until(() => ssh.contacts().every((c) => !alive(c.pid)), "the blocked ssh to be killed at the limit");
      await runtime.shutdown();
      // (a busy machine may have let the first runtime try once more before it ended: count from here)
      const before = ssh.contacts().length;

      // Resumed with the same owed revision: asked again in the background, the record kept until an answer.
      const resumed = open(host, { STATE_FLOW_REMOTE_TIMEOUT_MS: "600000" });
      await resumed.sessionStart("resume", identity, "marked");
      expect(resumed.episodeName(), "the branch is restored").toBe("active.steady");
      await until(() => ssh.contacts().length > before, "the resumed runtime to ask the remote");
      expect(alive(ssh.contacts()[before]!.pid)).toBe(true);
      expect(pending()).toMatchObject({ state: "pending", lastError: expect.stringMatching(cause) });
      resumed.shutdown();
      await until(() => ssh.contacts().every((c) => !alive(c.pid)), "shutdown to kill the question");
    },
  );

  it("autoStart at Pi startup returns while the remote blocks", async () => {
    const { identity, open, ssh } = blockedWorld(600_000, { autoStart: true });
    const runtime = open(new RecordingHost(identity.sessionId));
    await runtime.sessionStart("startup", identity, "empty");
    expect(runtime.episodeName(), "started by itself").toMatch(/^active\./);
    await until(() => ssh.contacts().length === 1, "the remote to be asked, in the background");
    expect(alive(ssh.contacts()[0]!.pid), "startup returned; the remote has not answered").toBe(true);
    runtime.shutdown();
    await until(() => !alive(ssh.contacts()[0]!.pid), "shutdown to kill the question");
  });

  it("under transition policy, a start after a stop does not wait for its push, which shutdown kills", async () => {
    const { identity, open, ssh } = blockedWorld(600_000, { policy: "transition" });
    const runtime = open(new RecordingHost(identity.sessionId));
    await runtime.sessionStart("startup", identity, "empty");
    await runtime.command("start");
    await runtime.command("stop");
    expect(runtime.episodeName()).toBe("passive");
    await runtime.command("start");
    expect(runtime.episodeName()).toMatch(/^active\./);
    const pushing = () => ssh.contacts().find((c) => c.args.includes("git-receive-pack"));
    await until(() => pushing() !== undefined, "the push of the new start revision, in the background");
    expect(alive(pushing()!.pid), "start returned; the push has not").toBe(true);
    // Its result would be fenced, and a live child would keep Pi's process (print mode) from exiting.
    runtime.shutdown();
    await until(() => !alive(pushing()!.pid), "shutdown to kill the push");
    const resumed = open(new RecordingHost(identity.sessionId));
    await resumed.sessionStart("resume", identity, "marked");
    const asked = () => ssh.contacts().filter((c) => c.args.includes("git-upload-pack"));
    await until(() => asked().length > 0, "the resumed runtime to ask again about the revision it still owes");
    resumed.shutdown();
  });
});

describe("a push at work when the session ends (print mode ends right after its run)", () => {
  /** A Git world on a local bare remote whose receiving side takes a second: the run's push is at work. */
  async function pushingAtEnd(moreEnv: Record<string, string>) {
    const w = world(true, { env: moreEnv });
    const bare = temp();
    gitIn(bare, w.env, "init", "-q", "--bare");
    mkdirSync(w.root, { recursive: true });
    gitIn(w.root, w.env, "init", "-q");
    gitIn(w.root, w.env, "remote", "add", "origin", bare);
    const runtime = w.open(new RecordingHost(w.identity.sessionId));
    await runtime.sessionStart("startup", w.identity, "empty");
    await runtime.command("start");
    const file = join(w.root, ".git", "state-flow", "pending", `${w.identity.sessionKey}.json`);
    const record = () => (existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>) : {});
    const head = () => gitIn(w.root, w.env, "rev-parse", "HEAD").trim();
    await until(() => record().state === "settled" && record().revision === head(), "the start's push");
    writeFileSync(join(bare, "hooks", "pre-receive"), "#!/bin/sh\ncat >/dev/null\nsleep 1\n", { mode: 0o755 });
    expect(runtime.runAnnounced(prompt("remember the plan"))).toBe(true);
    await runtime.patchState(parsePatchSet({ session: { working: { plan: "A" } }, final: true }));
    runtime.draft({ id: 1, ending: "complete", text: "Plan A.", stopReason: "stop" });
    await runtime.turnEnd();
    runtime.runEnded();
    await until(() => /^Remote: pushing [0-9a-f]{12} now$/m.test(runtime.status()), "the run's push at work");
    return { runtime, head: head(), record };
  }

  it("gets a few seconds to finish: the change reaches the remote and is recorded settled", async () => {
    const { runtime, head, record } = await pushingAtEnd({});
    await runtime.shutdown();
    expect(record()).toEqual({ state: "settled", revision: head });
  });

  it("the control, no time at all: the push is stopped and stays owed to the next start", async () => {
    const { runtime, record } = await pushingAtEnd({ STATE_FLOW_SHUTDOWN_PUSH_MS: "0" });
    await runtime.shutdown();
    expect(record().state).toBe("pending");
  });
});
