// A fork of a State Flow session, in real Pi sessions on one store (Git and file-only): Pi copies the
// parent's entries into the fork (`createBranchedSession` at a point, as /fork does; `forkFrom`, as
// `pi --fork` does). The fork starts enabled with its own copy of the parent's session layer at the fork
// point, over the shared state as it is now; the parent is untouched; later changes stay on their side.
// A fork of a stopped parent stays off; a file-only parent that no longer holds the fork point says so,
// and the advice it gives (/state-flow-start) works.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";
import { cwdKey, sessionKeyFromFile } from "../../../storage/layout.ts";

const harness = harnessFactory();

/** A parent that recorded `working.n` = 1..runs (one run each) and, in its last run, `global.shared`. */
async function parentWithRuns(git: boolean, runs: number): Promise<PiHarness> {
  const parent = await harness({ sessionKind: "file", ...(git ? {} : { git: false }) });
  await parent.command("/state-flow-start");
  for (let n = 1; n <= runs; n++) {
    parent.script(call("patch_state", { session: { working: { n } }, final: true }), say(`answer ${n}`));
    await parent.prompt(`request ${n}`);
  }
  return parent;
}

/** The entry id of the checkpoint the parent recorded for its run `n` (the fork point /fork would leave). */
function checkpointOfRun(parent: PiHarness, n: number): string {
  const checkpoints = parent.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "state-flow");
  // The start's checkpoint comes first, then one per run.
  return checkpoints[n]!.id;
}

/** Pi's own fork at an entry: a new session file holding the path to it, its header naming the parent. */
function forkAt(parent: PiHarness, entryId: string): string {
  const manager = SessionManager.open(parent.session.sessionFile!, parent.sessionDir);
  return manager.createBranchedSession(entryId)!;
}

function sessionMeta(h: PiHarness, file: string): Record<string, unknown> {
  const path = join(h.storeRoot, cwdKey(h.cwd), sessionKeyFromFile(file), "meta.json");
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

for (const git of [true, false]) {
  describe(`a fork of an enabled session (${git ? "Git" : "file-only"} store)`, () => {
    it("starts on with its own copy of the session state at the fork point; the parent is untouched", async () => {
      const parent = await parentWithRuns(git, 3);
      const parentFile = parent.session.sessionFile!;
      const parentMeta = readFileSync(
        join(parent.storeRoot, cwdKey(parent.cwd), sessionKeyFromFile(parentFile), "meta.json"),
      );
      const forkFile = forkAt(parent, checkpointOfRun(parent, 1));

      const fork = await harness({ shareWith: parent, openFile: forkFile });
      expect(fork.accessor.episode()).toBe("active.steady");
      expect(fork.accessor.read(0, "session").state.working).toEqual({ n: 1 });
      expect(fork.lastNotice()?.message).toMatch(
        new RegExp(
          "^This session is a fork of a State Flow session: State Flow is on here, with its own copy of the session " +
            "state at the fork point \\(step 1, transition t-[0-9a-f]{8} of session ",
        ),
      );
      // Where the copy came from is recorded in the fork's own meta; the parent's files are unchanged.
      expect(sessionMeta(fork, forkFile).fork).toMatchObject({ sessionKey: sessionKeyFromFile(parentFile) });
      expect(fork.accessor.status()).toContain(`forked from: session ${sessionKeyFromFile(parentFile)} at step 1 (`);
      await fork.command("/state-flow-history session");
      const history = fork.lastNotice()!.message;
      expect(history).toContain(`origin: forked from session ${sessionKeyFromFile(parentFile)} at its step 1`);
      expect(history).toContain("History starts at step 1: this session was forked there from session");
      expect(
        readFileSync(join(parent.storeRoot, cwdKey(parent.cwd), sessionKeyFromFile(parentFile), "meta.json")),
      ).toEqual(parentMeta);

      // Later changes stay on their side: the fork's session patch is its own, the parent's shared change is seen.
      parent.script(
        call("patch_state", { global: { contract: { shared: "from parent" } }, final: true }),
        say("parent shares"),
      );
      await parent.prompt("parent: share");
      fork.script(call("patch_state", { session: { working: { n: 10 } }, final: true }), say("fork answer"));
      await fork.prompt("fork request");
      expect(contextText(fork.contexts.at(-2)!)).toContain('"n": 1');
      expect(contextText(fork.contexts.at(-2)!)).toContain("from parent");
      expect(contextText(fork.contexts.at(-2)!), "the fork sends its state, not the parent's transcript").not.toContain(
        "request 1",
      );
      expect(fork.accessor.read(0, "session").state.working).toEqual({ n: 10 });
      expect(parent.accessor.read(0, "session").state.working).toEqual({ n: 3 });

      // Reopened, the fork restores its own state: it does not copy again.
      await fork.dispose();
      const again = await harness({ shareWith: parent, openFile: forkFile });
      expect(again.accessor.episode()).toBe("active.steady");
      expect(again.accessor.read(0, "session").state.working).toEqual({ n: 10 });
      expect(again.notices.some((n) => n.message.includes("is a fork"))).toBe(false);
    });

    it("`pi --fork` (the whole session copied) starts from the parent's newest state", async () => {
      const parent = await parentWithRuns(git, 2);
      const forkFile = SessionManager.forkFrom(
        parent.session.sessionFile!,
        parent.cwd,
        parent.sessionDir,
      ).getSessionFile()!;
      const fork = await harness({ shareWith: parent, openFile: forkFile });
      expect(fork.accessor.episode()).toBe("active.steady");
      expect(fork.accessor.read(0, "session").state.working).toEqual({ n: 2 });
    });
  });
}

describe("a fork whose point the parent no longer holds (file-only)", () => {
  it("starts off and says why; /state-flow-start then starts it with an empty session state", async () => {
    const parent = await parentWithRuns(false, 10);
    const fork = await harness({ shareWith: parent, openFile: forkAt(parent, checkpointOfRun(parent, 1)) });
    expect(fork.accessor.episode()).toBe("off");
    expect(fork.lastNotice()).toMatchObject({ level: "warning" });
    expect(fork.lastNotice()?.message).toMatch(
      new RegExp(
        "could not copy that session's state at the fork point, so it is off here.*Why: the fork point is step 1 " +
          "and the parent session is at step 20 now; a file-only store keeps only the newest eight steps",
      ),
    );
    await fork.command("/state-flow-start");
    expect(fork.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    expect(fork.accessor.read(0, "session").state.working).toEqual({});
  });
});

describe("a fork of a stopped session", () => {
  it("stays off and says so", async () => {
    const parent = await parentWithRuns(true, 1);
    await parent.command("/state-flow-stop");
    const forkFile = SessionManager.forkFrom(
      parent.session.sessionFile!,
      parent.cwd,
      parent.sessionDir,
    ).getSessionFile()!;
    const fork = await harness({ shareWith: parent, openFile: forkFile });
    expect(fork.accessor.episode()).toBe("off");
    expect(fork.lastNotice()?.message).toMatch(/^This session is a fork of a State Flow session that was stopped/);
  });
});
