// The runtime without Pi: a small host that keeps a branch as an array of checkpoint markers
// drives FlowRuntime over a real store (Git in a temp repository, and file-only), through start,
// an enabled run, stop, a restart from a fresh runtime and a failed-closed restore. What Pi adds
// (messages, tools, the footer) is covered by tests/adapters/pi; here the point is that every
// lifecycle step works with nothing of Pi loaded.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../core/cohort.ts";
import { FlowRuntime } from "../../runtime/flow-runtime.ts";
import type { SessionIdentity } from "../../runtime/session-identity.ts";
import { cwdKey } from "../../store/layout.ts";
import type { RunTrigger } from "../../runtime/specification.ts";
import { RecordingHost } from "../support/recording-host.ts";
import { gitTestEnv } from "../support/store-fixtures.ts";

const dirs: string[] = [];
const prompt = (text: string): RunTrigger => ({ kind: "prompt", text });
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), "sf-runtime-"));
  dirs.push(dir);
  return dir;
}

function world(git: boolean) {
  const root = join(temp(), "store");
  const cfg = join(temp(), "gitconfig");
  writeFileSync(cfg, "");
  const env = git ? gitTestEnv(cfg) : { ...gitTestEnv(cfg), PATH: temp() };
  const cwd = temp();
  const identity: SessionIdentity = {
    cwd,
    cwdKey: cwdKey(cwd),
    sessionId: "11111111-2222-7333-8444-555555555555",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  const open = (host: RecordingHost) =>
    new FlowRuntime(host, {
      storeRoot: root,
      knowledgeRoot: join(temp(), "knowledge"),
      env,
      autoStart: false,
      remotePublication: "turn-end",
      diagnostics: { agentDir: temp(), enabled: false },
      inspection: undefined,
    });
  return { root, identity, open };
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
        expect(host.view).toMatchObject({ toolsActive: true, toolsRegistered: true, footer: "state-flow #0" });

        expect(runtime.runStarted(prompt("remember the plan"))).toBe(true);
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
      expect(runtime.runStarted(prompt("answer without a patch"))).toBe(true);
      for (let id = 1; id <= 3; id++)
        runtime.draft({ id, ending: "complete", text: `draft ${id}`, stopReason: "stop" });
      expect(host.steers).toEqual([1, 2]);
      expect(host.notices.filter((n) => n.level === "error").map((n) => n.message)).toEqual([
        expect.stringMatching(/not accepted after 3 attempts/),
      ]);
      const projection = runtime.projection();
      expect(projection.mode === "bootstrap" && [...projection.discarded]).toEqual([1, 2, 3]);
      expect(host.discardedDrafts, "each discard is recorded on the branch too").toEqual([1, 2, 3]);
      runtime.runEnded();
      expect(runtime.episodeName()).toBe("active.bootstrap.fromTranscript");
      expect(runtime.runStarted(prompt("next run")), "a new run gets a fresh resolution").toBe(true);
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
      expect(runtime.runStarted(prompt("first"))).toBe(false);
      expect(runtime.projection()).toEqual({ mode: "ordinary" });
      runtime.draft({ id: 1, ending: "complete", text: "plain", stopReason: "stop" });
      runtime.userMessage("a follow-up");
      expect(host.steers, "nothing is resolved, so nothing is steered").toEqual([]);
      runtime.runEnded();
      expect(runtime.status()).toContain("tools NOT active: patch_state, read_state");

      host.withheldTools = [];
      expect(runtime.runStarted(prompt("second")), "the tools are back: an enabled run again").toBe(true);
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
      expect(host.view).toMatchObject({ toolsActive: false, toolsRegistered: false, footer: "state-flow unavailable" });
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
