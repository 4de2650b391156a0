import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } from "@earendil-works/pi-ai";
import { cwdKey, sessionKeyFromFile } from "../../../storage/layout.ts";
import { footerText } from "../../../adapters/pi/controller.ts";
import {
  PiHarness,
  call,
  contextText,
  harnessFactory,
  say,
  holdForeignLock,
  waitUntil,
} from "../../support/pi-harness.ts";

const harness = harnessFactory();

function agentStarts(h: PiHarness): number {
  return h.session.messages.filter(
    (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-run",
  ).length;
}

describe("terminal resolution in a real session", () => {
  it(
    "an unresolved draft is discarded and answered with a " +
      "hidden same-run steer; the later final answer is committed",
    async () => {
      const h = await harness();
      await h.command("/state-flow-start");
      h.script(
        say("Draft without final."),
        call("patch_state", { session: { working: { done: true } }, final: true }),
        say("Accepted answer."),
      );
      await h.prompt("answer me");
      expect(agentStarts(h)).toBe(1);
      expect(h.accessor.read(0).state.response).toBe("Accepted answer.");
      const steer = h.session.messages.find(
        (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
      ) as { display: boolean } | undefined;
      expect(steer?.display).toBe(false);
      const second = contextText(h.contexts[1]!);
      expect(second).not.toContain("Draft without final.");
      expect(second).toContain("[State Flow resolution 1/3]");
      // The private instruction never stays: the next run's context has neither note nor draft.
      h.script(call("patch_state", { final: true }), say("next"));
      await h.prompt("next question");
      const later = contextText(h.contexts[h.contexts.length - 1]!);
      expect(later).not.toContain("State Flow resolution");
      expect(later).not.toContain("Draft without final.");
    },
  );

  it("the third unresolved attempt ends steering with one concise error, keeping state and enablement", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { kept: 1 } } }), say("one"), say("two"), say("three"));
    await h.prompt("never final");
    const notes = h.session.messages.filter(
      (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
    );
    expect(notes).toHaveLength(2);
    const errors = h.notices.filter((n) => n.level === "error");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(
      /did not accept the answer: after 3 attempts the model still answered without calling patch_state/,
    );
    expect(h.accessor.read(0).state).toMatchObject({ working: { kept: 1 }, response: "" });
    expect(h.accessor.episode()).toMatch(/^active/);
    expect(h.activeTools).toContain("patch_state");
  });

  it("failed patch calls consume nothing", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { response: "forged" } }),
      call("patch_state", { scope: "session", patch: {} }),
      call("patch_state", { session: {} }),
      say("unresolved one"),
      call("patch_state", { final: true }),
      say("final"),
    );
    await h.prompt("try bad patches");
    const errors = (
      h.session.messages.filter((m) => m.role === "toolResult") as { isError: boolean; content: { text: string }[] }[]
    ).filter((r) => r.isError);
    expect(errors.map((e) => e.content[0]!.text)).toEqual([
      expect.stringMatching(/response is not patchable/),
      expect.stringMatching(/retired \{scope, patch\} form/),
      expect.stringMatching(/empty scope patch/),
    ]);
    expect(h.accessor.read(0).state.response).toBe("final");
    const notes = h.session.messages.filter(
      (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
    );
    expect(notes).toHaveLength(1);
  });

  it("HTML comments carry no state: a state_flow one neither patches nor resolves; others' comments stay", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    // A draft that speaks the retired comment protocol: were it parsed, it would set working.forged and
    // latch final, and this draft would be the response with no steer.
    const retired = 'Draft.\n<!-- state_flow {"session":{"working":{"forged":1}},"final":true} -->';
    const answer =
      'Done.\n<!-- telegram_button: {"text":"Open","url":"https://example.org"} -->\n' +
      '<!-- state_flow {"session":{"working":{"forged":2}}} -->';
    h.script(say(retired), call("patch_state", { session: { working: { real: 1 } }, final: true }), say(answer));
    await h.prompt("answer with comments");
    const steers = h.session.messages.filter(
      (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
    );
    expect(steers, "the comment is not a resolution").toHaveLength(1);
    const state = h.accessor.read(0).state;
    expect(state.working).toEqual({ real: 1 });
    // The accepted answer is ordinary text, byte for byte: neither comment stripped nor rewritten.
    expect(state.response).toBe(answer);
    const shown = h.session.messages.filter((m) => m.role === "assistant").at(-1) as { content: { text?: string }[] };
    expect(shown.content.map((c) => c.text ?? "").join("")).toBe(answer);
  });

  it.each(["length", "error", "aborted"] as const)(
    "a %s ending is never committed as response and is not steered",
    async (stopReason) => {
      const h = await harness();
      await h.command("/state-flow-start");
      h.script(call("patch_state", { final: true }), () =>
        fauxAssistantMessage([fauxText("partial answer")], { stopReason }),
      );
      await h.prompt("interrupted");
      expect(h.accessor.read(0).state.response).toBe("");
      expect(
        h.session.messages.some(
          (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
        ),
      ).toBe(false);
    },
  );
});

describe("episode in a real session", () => {
  it("autoStart enables a genuinely new session immediately, without bootstrap", async () => {
    const h = await harness({ config: { autoStart: true } });
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.activeTools).toContain("patch_state");
  });

  it("stop gives a passive projection that survives reload and never shows pre-stop raw history", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { fact: "kept" } }, final: true }), say("PRE-STOP ANSWER"));
    await h.prompt("PRE-STOP REQUEST");
    const before = h.accessor.read(0).state;
    await h.command("/state-flow-stop");
    expect(h.accessor.episode()).toBe("passive");
    expect(h.activeTools).not.toContain("patch_state");
    // Stop changes config, not history.
    expect(h.accessor.read(0).state).toEqual(before);
    h.script(say("passive answer"));
    await h.prompt("after stop");
    const passive = contextText(h.contexts[h.contexts.length - 1]!);
    expect(passive).toContain("frozen exit handoff");
    expect(passive).toContain('"fact": "kept"');
    expect(passive).not.toContain("PRE-STOP REQUEST");
    // The answer survives only inside the frozen state (as response), never as a raw message.
    expect(passive.split("PRE-STOP ANSWER")).toHaveLength(2);
    await h.session.reload();
    expect(h.accessor.episode()).toBe("passive");
    h.script(say("still passive"));
    await h.prompt("after reload");
    const reloaded = contextText(h.contexts[h.contexts.length - 1]!);
    expect(reloaded).not.toContain("PRE-STOP REQUEST");
    expect(reloaded).toContain("after stop");
  });

  it("a session that ends unsaved leaves no store session; a reload or a saved session keeps it", async () => {
    // (the session configs in the store, one per store session)
    const configs = (h: PiHarness) =>
      readdirSync(h.storeRoot, { recursive: true, encoding: "utf8" }).filter(
        (f) => !f.startsWith(".git") && f.endsWith("config.json"),
      );
    const removal = /^Pi did not save this session .* State Flow removed the session state it had started, \//;
    const unsaved = await harness({ sessionKind: "file" });
    await unsaved.command("/state-flow-start");
    expect(configs(unsaved)).toHaveLength(1);
    expect(existsSync(unsaved.session.sessionFile!), "Pi saves no session without a conversation").toBe(false);
    // Pi awaits session_shutdown: the removal is committed (and said) once the handler returns.
    await unsaved.shutdown();
    expect(configs(unsaved)).toEqual([]);
    expect(unsaved.lastNotice()).toEqual({ message: expect.stringMatching(removal), level: "info" });
    expect(unsaved.accessor.episode()).toBe("closed");

    const reloaded = await harness({ sessionKind: "file", shareWith: unsaved });
    await reloaded.command("/state-flow-start");
    await reloaded.session.reload(); // session_shutdown{reload}: the same session goes on
    expect(configs(reloaded)).toHaveLength(1);
    expect(existsSync(reloaded.session.sessionFile!)).toBe(false);
    const seen = reloaded.notices.length;
    await reloaded.shutdown();
    expect(configs(reloaded)).toEqual([]);
    // (the reloaded extension restored the branch steady: its removal is not said, as after an automatic start)
    expect(reloaded.notices.slice(seen)).toEqual([]);

    const memory = await harness({ shareWith: unsaved }); // --no-session: Pi never saves it
    await memory.command("/state-flow-start");
    await memory.shutdown();
    expect(configs(memory)).toEqual([]);
    expect(memory.lastNotice()!.message).toMatch(removal);

    const saved = await harness({ sessionKind: "file", shareWith: unsaved });
    await saved.command("/state-flow-start");
    saved.script(say("hello"));
    await saved.prompt("hi");
    await saved.shutdown();
    expect(configs(saved)).toHaveLength(1);
    expect(saved.notices.map((n) => n.message).join("\n")).not.toContain("Pi did not save");
    expect([unsaved, reloaded, memory, saved].flatMap((h) => h.extensionErrors())).toEqual([]);
  });

  it("autoStart: a new session that ends unsaved is removed again, unsaid; one it can't remove is said", async () => {
    const configs = (h: PiHarness) =>
      readdirSync(h.storeRoot, { recursive: true, encoding: "utf8" }).filter(
        (f) => !f.startsWith(".git") && f.endsWith("config.json"),
      );
    const auto = await harness({ config: { autoStart: true } });
    expect(auto.accessor.episode()).toBe("active.steady");
    expect(configs(auto)).toHaveLength(1);
    await auto.shutdown();
    expect(configs(auto)).toEqual([]);
    expect(auto.notices).toEqual([]);

    const held = await harness({ config: { autoStart: true }, shareWith: auto });
    // Another writer holds the store's publication lock past the removal's retries: the folder stays, said.
    holdForeignLock(join(held.storeRoot, ".git", "state-flow-publication.lock"));
    await held.shutdown();
    expect(configs(held)).toHaveLength(1);
    expect(held.lastNotice()).toEqual({
      message: expect.stringMatching(
        /^Pi did not save this session, and State Flow could not remove the session state it had started: .*held/,
      ),
      level: "warning",
    });
    expect(held.accessor.episode()).toBe("closed");
  }, 20_000);

  it("a stop with nothing to stop says which: never started, or already stopped and how to start again", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-stop");
    expect(h.lastNotice()).toEqual({
      message: "State Flow is not enabled on this branch; nothing to stop.",
      level: "info",
    });
    await h.command("/state-flow-start");
    await h.command("/state-flow-stop");
    expect(h.accessor.episode()).toBe("passive");
    await h.command("/state-flow-stop");
    expect(h.accessor.episode()).toBe("passive");
    expect(h.lastNotice()).toEqual({
      message: "State Flow is already stopped on this branch; nothing to stop. /state-flow-start turns it back on.",
      level: "info",
    });
    await h.session.reload();
    await h.command("/state-flow-stop");
    expect(h.lastNotice()!.message, "a reloaded stopped branch says so too").toMatch(/^State Flow is already stopped/);
    expect(h.extensionErrors()).toEqual([]);
  });

  it(
    "/state-flow-stop typed while a run is streaming waits for the run, " +
      "so its accepted patch and answer are part of the stopped state",
    async () => {
      const h = await harness();
      await h.command("/state-flow-start");
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let thinking!: () => void;
      const modelCalled = new Promise<void>((resolve) => (thinking = resolve));
      const patch = call("patch_state", { session: { working: { fact: "from the run" } }, final: true });
      h.script(
        // the model is still thinking when the user types the command (the harness passes promises through)
        (async () => {
          thinking();
          await gate;
          return patch();
        }) as unknown as typeof patch,
        say("answer of the run"),
      );
      const run = h.session.prompt("work");
      await modelCalled; // the run streams: its model was called and cannot answer before release()
      expect(h.session.isStreaming).toBe(true);
      let waited = false;
      const waiting = h.commandWaitsForIdle().then(() => (waited = true));
      // Pi runs extension commands at once, even while streaming; this promise settles when the handler returns.
      const stop = h.session.prompt("/state-flow-stop");
      const ended = stop.then(() => {
        if (!waited) throw new Error("the stop ended without waiting for the run");
      });
      await Promise.race([waiting, ended]); // the stop's handler now waits for the run, which cannot end yet
      expect(h.accessor.episode(), "the stop waits for the run").toMatch(/^active/);
      release();
      await Promise.all([run, stop, ended]);
      await h.session.waitForIdle();
      expect(h.accessor.episode()).toBe("passive");
      expect(h.accessor.read(0, "session").state).toMatchObject({
        working: { fact: "from the run" },
        response: "answer of the run",
      });
      const markers = h.session.sessionManager
        .getBranch()
        .filter((e) => e.type === "custom" && e.customType === "state-flow")
        .map((e) => (e as { data: unknown }).data);
      expect(markers.at(-1)).toEqual({ disabled: true });
    },
  );

  it(
    "a stop that cannot be persisted (lock held by another " + "writer) keeps the branch enabled, visibly (I1.12)",
    async () => {
      const { rmSync } = await import("node:fs");
      const h = await harness();
      await h.command("/state-flow-start");
      h.script(call("patch_state", { session: { working: { fact: "kept" } }, final: true }), say("ok"));
      await h.prompt("before stop");
      const lock = join(h.storeRoot, ".git", "state-flow-publication.lock");
      holdForeignLock(lock);
      await h.command("/state-flow-stop");
      expect(h.accessor.episode()).toBe("active.steady");
      expect(h.activeTools).toContain("patch_state");
      expect(
        h.notices
          .filter((n) => n.level === "error")
          .map((n) => n.message)
          .join("\n"),
      ).toMatch(/could not persist the stop[\s\S]*stays enabled/);
      expect(
        h.session.messages.some(
          (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-stop",
        ),
      ).toBe(false);
      rmSync(lock);
      await h.command("/state-flow-stop");
      expect(h.accessor.episode()).toBe("passive");
    },
  );

  it("a refused response is said by name, accepts nothing, keeps the bootstrap until one is committed", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    const lock = join(h.storeRoot, ".git", "state-flow-publication.lock");
    // Another writer takes the store's lock after the final patch, while the answer is being written.
    const answerUnderLock: Parameters<PiHarness["script"]>[0] = (context) => {
      holdForeignLock(lock);
      void context;
      return say("refused answer")();
    };
    h.script(call("patch_state", { session: { working: { fact: "kept" } }, final: true }), answerUnderLock);
    await h.prompt("first request");
    const errors = h.notices.filter((n) => n.level === "error").map((n) => n.message);
    expect(errors.join("\n")).toMatch(/could not commit the response: The State Flow publication lock .* is held by/);
    expect(h.accessor.episode(), "the run was not accepted: still the migration run").toBe(
      "active.bootstrap.fromTranscript",
    );
    expect(h.accessor.read(0).state.response).not.toBe("refused answer");
    expect((h.accessor.read(0, "session").state.working as { fact?: string }).fact).toBe("kept");
    rmSync(lock);
    h.script(call("patch_state", { final: true }), say("committed answer"));
    await h.prompt("second request");
    expect(h.accessor.read(0).state.response).toBe("committed answer");
    expect(h.accessor.episode()).toBe("active.steady");
  });

  it(
    "/tree while stopped, then reload: the frozen boundary " + "is the stopped revision, and restart resumes from it",
    async () => {
      const h = await harness({ sessionKind: "file" });
      await h.command("/state-flow-start");
      h.script(call("patch_state", { session: { working: { v: 1 } }, final: true }), say("one"));
      await h.prompt("first");
      const afterV1 = h.session.sessionManager.getLeafId()!;
      h.script(call("patch_state", { session: { working: { v: 2 } }, final: true }), say("two"));
      await h.prompt("second");
      await h.command("/state-flow-stop");
      await h.session.navigateTree(afterV1);
      expect(h.accessor.episode()).toBe("passive");
      await h.session.reload();
      expect(h.accessor.episode()).toBe("passive");
      expect(h.accessor.read(0, "session").state.working).toEqual({ v: 2 });
      await h.command("/state-flow-start");
      expect(h.accessor.episode()).toBe("active.bootstrap.fromHandoff");
      expect(h.accessor.read(0, "session").state.working).toEqual({ v: 2 });
    },
  );

  it("/tree onto the stop handoff restores the stopped boundary, never plain off with the raw transcript", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { kept: true } }, final: true }), say("answer"));
    await h.prompt("PRE-STOP REQUEST");
    await h.command("/state-flow-stop");
    const handoff = h.session.sessionManager
      .getBranch()
      .find((e) => e.type === "custom_message" && e.customType === "state-flow-stop")!;
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { later: true } }, final: true }), say("later"));
    await h.prompt("after restart");
    await h.session.navigateTree(handoff.id);
    expect(h.accessor.episode()).not.toBe("off");
    h.script(say("plain"));
    await h.prompt("what now");
    expect(contextText(h.contexts[h.contexts.length - 1]!)).not.toContain("PRE-STOP REQUEST");
    expect(h.accessor.read(0, "session").state.working).toMatchObject({ kept: true });
  });

  it("restart after stop bootstraps from the frozen boundary, not the raw pre-stop transcript", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { fact: "kept" } }, final: true }), say("PRE-STOP ANSWER"));
    await h.prompt("PRE-STOP REQUEST");
    await h.command("/state-flow-stop");
    h.script(say("passive answer"));
    await h.prompt("POST-STOP QUESTION");
    await h.command("/state-flow-start");
    expect(h.accessor.episode()).toBe("active.bootstrap.fromHandoff");
    h.script(call("patch_state", { session: { working: { migrated: true } }, final: true }), say("migrated"));
    await h.prompt("restart request");
    const bootstrap = contextText(h.contexts[h.contexts.length - 2]!);
    expect(bootstrap).toContain("frozen exit handoff");
    expect(bootstrap).toContain("POST-STOP QUESTION");
    expect(bootstrap).not.toContain("PRE-STOP REQUEST");
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0, "session").state.working).toEqual({ fact: "kept", migrated: true });
  });

  it("a new session gets an empty session layer and inherits only global and cwd", async () => {
    const first = await harness();
    await first.command("/state-flow-start");
    first.script(
      call("patch_state", {
        global: { contract: { g: 1 } },
        cwd: { contract: { c: 1 } },
        session: { working: { mine: "first" } },
        final: true,
      }),
      say("ok"),
    );
    await first.prompt("seed");
    const second = await harness({ shareWith: first });
    expect(second.accessor.episode()).toBe("off");
    await second.command("/state-flow-start");
    const state = second.accessor.read(0).state;
    expect(state.contract).toEqual({ g: 1, c: 1 });
    expect(state.working).toEqual({});
    expect(second.accessor.read(0, "session").state.working).toEqual({});
  });

  it("/tree restores the branch's own revision; a malformed newest entry falls back", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { v: 1 } }, final: true }), say("one"));
    await h.prompt("first");
    const branchPoint = h.session.sessionManager.getLeafId()!;
    h.script(call("patch_state", { session: { working: { v: 2 } }, final: true }), say("two"));
    await h.prompt("second");
    expect(h.accessor.read(0, "session").state.working).toEqual({ v: 2 });
    await h.session.navigateTree(branchPoint);
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.read(0, "session").state).toMatchObject({ working: { v: 1 }, response: "one" });
    // A malformed newest entry on the selected branch: restore falls back to the previous valid one.
    h.session.sessionManager.appendCustomEntry("state-flow", { revision: "not-a-revision" });
    await h.session.reload();
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0, "session").state.working).toEqual({ v: 1 });
  });
});

describe("status, diagnostics and configuration", () => {
  it("compact and detailed status", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { cwd: { artifacts: { "/k/a.md": { description: "notes" } } }, final: true }),
      say("ok"),
    );
    await h.prompt("status please");
    expect(h.statuses.filter(Boolean).pop()).toMatch(/^state-flow #\d+$/);
    await h.command("/state-flow-status");
    const status = h.lastNotice()!.message;
    expect(status).toMatch(/Runtime \(config and meta\)[\s\S]*Semantic materialization/);
    expect(status).toMatch(/scope keys: cwd --.*-- {4}session \S+_/);
    expect(status).toMatch(/revision: [0-9a-f]{40}/);
    expect(status).toMatch(/artifacts: global 0, cwd 1, session 0, effective 1/);
  });

  it("an allowlist without State Flow's tools: said once, no protocol, ordinary runs, real status", async () => {
    const h = await harness({ tools: ["read"] });
    await h.command("/state-flow-start");
    expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    const said = () => h.notices.filter((n) => /its tools are not active \(patch_state, read_state\)/.test(n.message));
    expect(said()).toHaveLength(1);
    expect(said()[0]!.level).toBe("warning");
    expect(said()[0]!.message).toContain("--tools read,bash,edit,write,patch_state,read_state");

    h.script(say("A plain answer."));
    await h.prompt("Answer this");
    h.script(say("Another plain answer."));
    await h.prompt("And this");
    expect(h.faux.getPendingResponseCount(), "no answer was refused and steered").toBe(0);
    for (const context of h.contexts) {
      expect(context.systemPrompt).not.toContain("## State Flow protocol");
      expect((context.tools ?? []).map((t) => t.name)).toEqual(["read"]);
      expect(contextText(context)).not.toContain("[State Flow runtime context");
    }
    expect(contextText(h.contexts[1]!), "an ordinary run sees Pi's own transcript").toContain("A plain answer.");
    expect(h.accessor.read(0).state.response, "nothing was recorded").toBe("");
    expect(said(), "said once, not per run").toHaveLength(1);
    expect(h.notices.filter((n) => n.level === "error")).toEqual([]);

    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain(
      "(tools NOT active: patch_state, read_state left out by a tool allowlist or another extension)",
    );
  });

  it("logs rejected patches and unresolved drafts only when logging is on, outside the store", async () => {
    const h = await harness({ config: { logging: true } });
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { working: { list: [null] } } }),
      say("draft"),
      call("patch_state", { final: true }),
      say("done"),
    );
    await h.prompt("log me");
    const log = join(h.agentDir, "tmp", "state-flow", "logs.jsonl");
    const records = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.kind)).toEqual(["rejected-patch", "unresolved-draft"]);
    expect(records[0].arguments).toEqual({ session: { working: { list: [null] } } });
    expect(records[0].error).toMatch(/session\.working\.list\[0\]: null inside an array cannot be stored/);
    expect(existsSync(join(h.storeRoot, "tmp"))).toBe(false);
  });

  it("a logged refusal names its tool, call id, attempt and eligibility; reasoning is never logged", async () => {
    const h = await harness({ config: { logging: true } });
    await h.command("/state-flow-start");
    const bad = { session: { response: "forged" } };
    const thinking =
      (reason: string, ...rest: ReturnType<typeof fauxText>[]) =>
      () =>
        fauxAssistantMessage([fauxThinking(reason), ...rest]);
    h.script(
      call("patch_state", bad, { id: "refused-before" }),
      thinking("PRIVATE REASONING ONE", fauxText("draft")),
      () =>
        fauxAssistantMessage(
          [fauxThinking("PRIVATE REASONING TWO"), fauxToolCall("patch_state", bad, { id: "late" })],
          {
            stopReason: "toolUse",
          },
        ),
      call("patch_state", { final: true }),
      call("patch_state", bad, { id: "eligible" }),
      say("done"),
    );
    await h.prompt("log me");
    const raw = readFileSync(join(h.agentDir, "tmp", "state-flow", "logs.jsonl"), "utf8");
    const records = raw
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // Each field is the run's real position: before any steer, after one, and latched eligible by the
    // accepted final:true, still after that one steer (eligibility does not reset the count).
    expect(records).toEqual([
      expect.objectContaining({
        kind: "rejected-patch",
        tool: "patch_state",
        toolCallId: "refused-before",
        arguments: bad,
        attempt: 0,
        eligible: false,
      }),
      expect.objectContaining({ kind: "unresolved-draft", text: "draft", attempt: 1, eligible: false }),
      expect.objectContaining({ kind: "rejected-patch", toolCallId: "late", attempt: 1, eligible: false }),
      expect.objectContaining({ kind: "rejected-patch", toolCallId: "eligible", attempt: 1, eligible: true }),
    ]);
    expect(JSON.stringify(h.session.messages), "the reasoning was there to leak").toContain("PRIVATE REASONING TWO");
    expect(raw).not.toContain("PRIVATE REASONING");
    expect(h.accessor.read(0).state.response).toBe("done");
  });

  it("an invalid state-flow.json turns State Flow off with the key and value named; Pi still loads", async () => {
    const h = await harness({ config: { autoStart: "yes" } });
    expect(h.loadErrors).toEqual([]);
    expect(h.lastNotice()).toEqual({
      message: expect.stringMatching(
        /^State Flow is off: .*state-flow\.json: "autoStart" = "yes" must be true or false/,
      ),
      level: "error",
    });
    expect(h.activeTools).not.toContain("patch_state");
  });
});

describe("episode across sessions and storage modes", () => {
  it("reopening the stopped session file keeps the passive projection; /tree keeps it too", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { fact: "kept" } }, final: true }), say("first answer"));
    await h.prompt("PRE-STOP REQUEST");
    const anchor = h.session.sessionManager.getLeafId()!;
    await h.command("/state-flow-stop");
    h.script(say("passive answer"));
    await h.prompt("after stop");
    const file = h.session.sessionManager.getSessionFile()!;
    const reopened = await harness({ shareWith: h, openFile: file });
    expect(reopened.accessor.episode()).toBe("passive");
    expect(reopened.activeTools).not.toContain("patch_state");
    reopened.script(say("resumed passive"));
    await reopened.prompt("resumed");
    expect(contextText(reopened.contexts[0]!)).not.toContain("PRE-STOP REQUEST");
    await reopened.session.navigateTree(anchor);
    expect(reopened.accessor.episode()).toBe("passive");
    reopened.script(say("tree passive"));
    await reopened.prompt("after tree");
    const text = contextText(reopened.contexts[1]!);
    expect(text).toContain("frozen exit handoff");
    expect(text).not.toContain("PRE-STOP REQUEST");
  });

  it("starting mid-conversation keeps the pre-Flow context for exactly one migration run", async () => {
    const h = await harness();
    h.script(say("ordinary answer"));
    await h.prompt("EARLY ORDINARY REQUEST");
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { working: { migrated: "early request" } }, final: true }),
      say("migrated"),
    );
    await h.prompt("first flow run");
    expect(contextText(h.contexts[1]!)).toContain("EARLY ORDINARY REQUEST");
    expect(contextText(h.contexts[1]!)).toContain("## Bootstrap");
    h.script(call("patch_state", { final: true }), say("steady"));
    await h.prompt("second flow run");
    const steady = contextText(h.contexts[h.contexts.length - 2]!);
    expect(steady).not.toContain("EARLY ORDINARY REQUEST");
    expect(steady).not.toContain("first flow run");
    expect(steady).toContain('"migrated": "early request"');
  });

  it("foreign extensions' custom messages stay in the projection", async () => {
    const foreign = (pi: import("@earendil-works/pi-coding-agent").ExtensionAPI) => {
      pi.on("before_agent_start", () => ({
        message: { customType: "other-ext", content: "FOREIGN CONTEXT", display: true },
      }));
    };
    const h = await harness({ extraExtensions: [foreign] });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("a"));
    await h.prompt("one");
    h.script(call("patch_state", { final: true }), say("b"));
    await h.prompt("two");
    const text = contextText(h.contexts[h.contexts.length - 1]!);
    expect(text.split("FOREIGN CONTEXT").length - 1).toBe(2);
  });

  it("file-only mode when git is absent: start, patch, reload restores the exact cohort", async () => {
    const h = await harness({ git: false, sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { cwd: { contract: { mode: "file-only" } }, final: true }), say("ok"));
    await h.prompt("file only");
    expect(existsSync(join(h.storeRoot, ".git"))).toBe(false);
    const entries = h.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "custom" && e.customType === "state-flow");
    expect((entries[entries.length - 1] as { data: { revision: string } }).data.revision).toMatch(
      /^file:[0-9a-f]{64}$/,
    );
    await h.session.reload();
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0, "cwd").state.contract).toEqual({ mode: "file-only" });
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toMatch(/store: file at/);
  });
});

describe("adopting an active file-only branch into Git", () => {
  const entriesOf = (h: PiHarness) =>
    h.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "custom" && e.customType === "state-flow")
      .map((e) => (e as { data: { revision?: string } }).data.revision);

  const sessionDir = (h: PiHarness) => `${cwdKey(h.cwd)}/${sessionKeyFromFile(h.session.sessionFile!)}`;

  it(
    "git installed later: /state-flow-start commits the exact current " +
      "cohort, binds the branch to it, and later transitions are commits",
    async () => {
      const { execFileSync } = await import("node:child_process");
      const h = await harness({ git: false, sessionKind: "file", config: { remotePublication: "off" } });
      const git = (...args: string[]) =>
        execFileSync("git", args, { cwd: h.storeRoot, env: { ...h.env, PATH: process.env.PATH }, encoding: "utf8" });
      await h.command("/state-flow-start");
      h.script(
        call("patch_state", {
          cwd: { contract: { mode: "file-only" } },
          session: { working: { offline: true } },
          final: true,
        }),
        say("ok"),
      );
      await h.prompt("before git");
      const fileCohort = readFileSync(join(h.storeRoot, sessionDir(h), "checkpoint.json"));
      await h.command("/state-flow-start");
      expect(h.lastNotice()!.message).toMatch(/already active/); // git still absent
      expect(existsSync(join(h.storeRoot, ".git"))).toBe(false);

      h.env.PATH = process.env.PATH; // git is installed
      await h.command("/state-flow-start");
      expect(h.notices.map((n) => n.message)).toContainEqual(
        expect.stringMatching(/adopted this branch's file-only store into Git/),
      );
      expect(h.accessor.episode()).toBe("active.steady");
      const head = git("rev-parse", "HEAD").trim();
      expect(entriesOf(h).at(-1)).toBe(head); // the branch is bound to the adoption commit
      expect(git("rev-list", "--count", "HEAD").trim()).toBe("1"); // no fabricated history
      expect(git("show", `HEAD:${sessionDir(h)}/checkpoint.json`)).toBe(fileCohort.toString()); // exact bytes
      expect(git("status", "--porcelain")).toBe("");
      expect(h.accessor.read(0, "cwd").state.contract).toEqual({ mode: "file-only" }); // semantic state unchanged
      await h.command("/state-flow-status");
      expect(h.lastNotice()!.message).toMatch(/store: git at/);

      h.script(
        call("patch_state", { session: { working: { offline: true, online: true } }, final: true }),
        say("online now"),
      );
      await h.prompt("after git");
      expect(git("rev-list", "--count", "HEAD").trim()).toBe("3"); // the patch and the response, each a commit
      expect(entriesOf(h).at(-1)).toBe(git("rev-parse", "HEAD").trim());
      await h.session.reload();
      expect(h.accessor.episode()).toBe("active.steady");
      expect(h.accessor.read(0, "session").state.working).toEqual({ offline: true, online: true });
      // hot history kept across the adoption
      expect(h.accessor.read(2, "session").state.working).toEqual({ offline: true });
    },
  );

  it(
    "git installed later, when another session's start already committed this branch's exact cohort: " +
      "/state-flow-start binds the branch to that commit and commits nothing",
    async () => {
      const { execFileSync } = await import("node:child_process");
      const h = await harness({ git: false, sessionKind: "file", config: { remotePublication: "off" } });
      const git = (...args: string[]) =>
        execFileSync("git", args, { cwd: h.storeRoot, env: { ...h.env, PATH: process.env.PATH }, encoding: "utf8" });
      await h.command("/state-flow-start");
      h.script(call("patch_state", { session: { working: { offline: true } }, final: true }), say("ok"));
      await h.prompt("before git");
      // Another session, with git, starts on the same store: it initializes the repository over the files.
      const other = await harness({ shareWith: h, config: { remotePublication: "off" } });
      await other.command("/state-flow-start");
      const owner = git("log", "-1", "--format=%H", "--", sessionDir(h)).trim();
      const commits = git("rev-list", "--count", "HEAD").trim();

      h.env.PATH = process.env.PATH; // git is installed here too
      await h.command("/state-flow-start");
      expect(h.lastNotice()!.message).toMatch(/adopted this branch's file-only store into Git/);
      expect(entriesOf(h).at(-1)).toBe(owner); // the revision that owns the cohort, reused
      expect(git("rev-list", "--count", "HEAD").trim()).toBe(commits); // nothing committed
      expect(h.accessor.read(0, "session").state.working).toEqual({ offline: true });
      h.script(call("patch_state", { session: { working: { offline: false } }, final: true }), say("online"));
      await h.prompt("after git");
      expect(entriesOf(h).at(-1)).toBe(git("rev-parse", "HEAD").trim());
      expect(h.accessor.read(2, "session").state.working).toEqual({ offline: true });
    },
  );

  it(
    "a failed adoption (no Git identity; a held lock) keeps the branch " +
      "enabled on its unchanged file-only store, and a later start adopts it",
    async () => {
      const h = await harness({ git: false, sessionKind: "file" });
      await h.command("/state-flow-start");
      h.script(call("patch_state", { session: { working: { kept: 1 } }, final: true }), say("ok"));
      await h.prompt("before git");
      const before = entriesOf(h).at(-1);
      h.env.PATH = process.env.PATH;
      for (const key of ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"])
        delete h.env[key];
      await h.command("/state-flow-start");
      const adoption = h.lastNotice()!.message; // one notice: the cause, then what it left
      expect(adoption).toMatch(/^State Flow could not adopt this branch's store into Git: Git has no commit identity/);
      expect(adoption).toMatch(/stays enabled on its unchanged file-only store; run \/state-flow-start again/);
      expect(h.accessor.episode()).toBe("active.steady");
      expect(entriesOf(h).at(-1)).toBe(before);
      // still usable: the next transition is published to the same file store
      h.script(call("patch_state", { session: { working: { kept: 2 } }, final: true }), say("ok"));
      await h.prompt("still file-only");
      expect(entriesOf(h).at(-1)).toMatch(/^file:/);
      expect(h.accessor.read(0, "session").state.working).toEqual({ kept: 2 });
      // identity configured, but another writer holds the repository's publication lock: the commit
      // fails after the repository was opened, and the branch still keeps publishing to its files
      Object.assign(h.env, {
        GIT_AUTHOR_NAME: "A",
        GIT_AUTHOR_EMAIL: "a@state-flow.invalid",
        GIT_COMMITTER_NAME: "A",
        GIT_COMMITTER_EMAIL: "a@state-flow.invalid",
      });
      const lock = join(h.storeRoot, ".git", "state-flow-publication.lock");
      holdForeignLock(lock);
      await h.command("/state-flow-start");
      expect(h.lastNotice()!.message).toMatch(/could not adopt this branch's store into Git/);
      h.script(call("patch_state", { session: { working: { kept: 3 } }, final: true }), say("ok"));
      await h.prompt("file-only while the lock is held");
      expect(entriesOf(h).at(-1)).toMatch(/^file:/);
      rmSync(lock);
      await h.command("/state-flow-start");
      expect(h.lastNotice()!.message).toMatch(/adopted this branch's file-only store into Git/);
      expect(entriesOf(h).at(-1)).toMatch(/^[0-9a-f]{40}$/);
      expect(h.accessor.read(0, "session").state.working).toEqual({ kept: 3 });
    },
  );
});

describe("publication through Pi", () => {
  it("unreachable remote → pending → resume → remote fixed → the same accepted commit is pushed", async () => {
    const { execFileSync } = await import("node:child_process");
    const { mkdirSync } = await import("node:fs");
    const h = await harness({ sessionKind: "file", config: { remotePublication: "transition" } });
    const remote = join(h.root, "remote.git");
    mkdirSync(h.storeRoot, { recursive: true });
    const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env: h.env, encoding: "utf8" });
    git(h.storeRoot, "init", "-q");
    git(h.storeRoot, "remote", "add", "origin", remote);
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { publish: "me" } }, final: true }), say("ok"));
    await h.prompt("publish");
    expect(h.notices.some((n) => /push of [0-9a-f]{12} is pending/.test(n.message))).toBe(true);
    const head = git(h.storeRoot, "rev-parse", "HEAD").trim();
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toMatch(/publication: transition \(pending [0-9a-f]{40}\)/);
    // What is owed survives the session, durably, beside the repository (never in a cohort).
    const file = h.session.sessionManager.getSessionFile()!;
    const recordPath = join(h.storeRoot, ".git/state-flow/pending", `${sessionKeyFromFile(file)}.json`);
    const record = () => JSON.parse(readFileSync(recordPath, "utf8")) as Record<string, unknown>;
    // Written in intent order but asynchronously: the response cohort's record may land after the run.
    await waitUntil(() => existsSync(recordPath) && record().revision === head && Number(record().attempts) >= 1);
    expect(record()).toMatchObject({ state: "pending", revision: head, lastError: expect.stringMatching(/remote/) });
    expect(record().attempts, "the failed attempts so far").toBeGreaterThanOrEqual(1);
    expect(git(h.storeRoot, "status", "--porcelain"), "the record is not part of the store").toBe("");
    // The remote becomes reachable; a resumed session retries the existing accepted commit.
    git(h.root, "init", "-q", "--bare", remote);
    const resumed = await harness({ shareWith: h, openFile: file, config: { remotePublication: "transition" } });
    expect(resumed.accessor.episode()).toBe("active.steady");
    const pushed = () => git(remote, "for-each-ref", "--format=%(objectname)").trim();
    await waitUntil(() => pushed() !== "");
    expect(pushed()).toBe(head);
    await waitUntil(() => record().state === "settled");
    expect(record()).toEqual({ state: "settled", revision: head });
  });
});

describe("a remote added mid-session", () => {
  it("takes effect at the next accepted cohort: local-only until then, pushed after, no restart", async () => {
    const { execFileSync } = await import("node:child_process");
    const h = await harness();
    const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env: h.env, encoding: "utf8" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { n: 1 } }, final: true }), say("local"));
    await h.prompt("before the remote exists");
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toMatch(/publication: turn-end\n/);
    const remote = join(h.root, "remote.git");
    git(h.root, "init", "-q", "--bare", remote);
    git(h.storeRoot, "remote", "add", "origin", remote);
    h.script(call("patch_state", { session: { working: { n: 2 } }, final: true }), say("published"));
    await h.prompt("after git remote add");
    const head = git(h.storeRoot, "rev-parse", "HEAD").trim();
    const pushed = () => git(remote, "for-each-ref", "--format=%(objectname)").trim();
    await waitUntil(() => pushed() === head);
    expect(pushed()).toBe(head);
    expect(h.notices.filter((n) => n.level !== "info")).toEqual([]);
  });
});

describe("Pi's own compaction and tree summaries", () => {
  it("after /compact and a summarized /tree, runs still project state and the current run only", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    for (let i = 1; i <= 3; i++) {
      h.script(call("patch_state", { session: { working: { [`run${i}`]: true } }, final: true }), say(`answer ${i}`));
      // Large enough that Pi's compaction (it keeps ~20k recent tokens) has something to cut.
      await h.prompt(`REQUEST ${i} ${"filler ".repeat(6000)}`);
    }
    const middle = h.session.sessionManager.getLeafId()!;
    // Pi summarizes the history and, when it cuts inside a turn, that turn's prefix: two calls.
    h.script(say("COMPACTION SUMMARY"), say("TURN PREFIX SUMMARY"));
    await h.session.compact();
    expect(h.extensionErrors()).toEqual([]);
    h.script(call("patch_state", { final: true }), say("after compaction"));
    await h.prompt("REQUEST 4");
    const afterCompaction = contextText(h.contexts[h.contexts.length - 2]!);
    expect(afterCompaction).toContain("REQUEST 4");
    expect(afterCompaction).toContain('"run3": true');
    expect(afterCompaction).not.toContain("REQUEST 3");
    expect(afterCompaction.match(/## state\[0\] —/g)).toHaveLength(1);
    h.script(say("TREE SUMMARY"));
    await h.session.navigateTree(middle, { summarize: true });
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0, "session").state.working).toEqual({ run1: true, run2: true, run3: true });
    h.script(call("patch_state", { final: true }), say("after tree"));
    await h.prompt("REQUEST 5");
    const afterTree = contextText(h.contexts[h.contexts.length - 2]!);
    expect(afterTree).toContain("REQUEST 5");
    expect(afterTree).not.toContain("REQUEST 4");
    expect(afterTree.match(/## state\[0\] —/g)).toHaveLength(1);
  });
});

describe("coexistence with a turn-recovery extension (pi-continuity style)", () => {
  it("a length-capped draft is recovered by the neighbour, never accepted; the recovered final answer is", async () => {
    const continuity = (pi: import("@earendil-works/pi-coding-agent").ExtensionAPI) => {
      pi.on("message_end", (event) => {
        const message = event.message as { role: string; stopReason?: string };
        if (message.role === "assistant" && message.stopReason === "length") {
          pi.sendMessage(
            { customType: "continuity", content: "Continue from where the output was cut.", display: false },
            { deliverAs: "steer", triggerTurn: true },
          );
        }
      });
    };
    const h = await harness({ extraExtensions: [continuity] });
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { working: { answer: "long" } }, final: true }),
      () => fauxAssistantMessage([fauxText("PARTIAL ANSWER")], { stopReason: "length" }),
      say("Recovered full answer."),
    );
    await h.prompt("long request");
    expect(h.accessor.read(0).state.response).toBe("Recovered full answer.");
    expect(
      h.session.messages.some(
        (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
      ),
    ).toBe(false);
    const recovery = contextText(h.contexts[2]!);
    expect(recovery).toContain("Continue from where the output was cut.");
    // The interrupted partial is State Flow's discarded draft; the neighbour's instruction stays.
    expect(recovery).not.toContain("PARTIAL ANSWER");
  });
});

describe("the footer", () => {
  it("is 001's accent state-flow and dim detail where the UI has a theme, plain text where it has none", () => {
    const theme = { fg: (color: string, text: string) => `<${color}>${text}</${color}>` };
    expect(footerText({ theme } as never, "#4")).toBe("<accent>state-flow</accent> <dim>#4</dim>");
    expect(footerText({} as never, "stopped")).toBe("state-flow stopped");
  });
});
