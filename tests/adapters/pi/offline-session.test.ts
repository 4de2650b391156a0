import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fauxAssistantMessage, fauxText } from "@earendil-works/pi-ai";
import { SessionManager, type ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { createOfflineSession, isolatedGitEnv, scriptedSteps } from "../../../adapters/pi/offline-session.ts";
import { runTriggerOf } from "../../../adapters/pi/pi-versions.ts";

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

describe("createOfflineSession", () => {
  it("runs a real AgentSession on the faux provider with the given extensions", async () => {
    root = mkdtempSync(join(tmpdir(), "sf-offline-"));
    const cwd = join(root, "project");
    mkdirSync(cwd);
    process.env.PI_CODING_AGENT_DIR = join(root, "agent");
    const seen: string[] = [];
    const probe = (pi: ExtensionAPI) => {
      pi.on("before_agent_start", (event) => {
        const trigger = runTriggerOf(event);
        seen.push(trigger.kind === "prompt" ? trigger.text : "(no prompt)");
      });
    };
    const { session, faux, loadErrors } = await createOfflineSession({
      cwd,
      agentDir: join(root, "agent"),
      modelsStorePath: join(root, "models.json"),
      extensionFactories: [probe],
      sessionManager: SessionManager.inMemory(cwd),
    });
    expect(loadErrors).toEqual([]);
    await session.bindExtensions({});
    faux.setResponses([fauxAssistantMessage([fauxText("offline answer")])]);
    await session.prompt("hello");
    await session.waitForIdle();
    expect(seen).toEqual(["hello"]);
    const last = session.messages[session.messages.length - 1] as { role: string; content: { text: string }[] };
    expect(last.role).toBe("assistant");
    expect(last.content[0]!.text).toBe("offline answer");
  });

  it("reports an extension that fails to load instead of throwing", async () => {
    root = mkdtempSync(join(tmpdir(), "sf-offline-"));
    const cwd = join(root, "project");
    mkdirSync(cwd);
    const { loadErrors } = await createOfflineSession({
      cwd,
      agentDir: join(root, "agent"),
      modelsStorePath: join(root, "models.json"),
      extensionFactories: [
        () => {
          throw new Error("broken factory");
        },
      ],
      sessionManager: SessionManager.inMemory(cwd),
    });
    expect(loadErrors).toEqual([expect.stringMatching(/broken factory/)]);
  });

  it("builds scripted steps: answers, tool calls with prefixed sequential ids, text before a call", () => {
    const { say, call, calls } = scriptedSteps("t");
    expect(say("done")()).toMatchObject({ stopReason: "stop", content: [{ type: "text", text: "done" }] });
    expect(say("cut", "length")().stopReason).toBe("length");
    expect(call("read_state", {})()).toMatchObject({
      stopReason: "toolUse",
      content: [{ type: "toolCall", id: "t-1", name: "read_state" }],
    });
    expect(call("patch_state", { final: true }, { text: "first", id: "mine" })().content).toMatchObject([
      { type: "text", text: "first" },
      { type: "toolCall", id: "mine", arguments: { final: true } },
    ]);
    expect(calls(["a", {}], ["b", {}])().content.map((c) => (c as { id: string }).id)).toEqual(["t-2", "t-3"]);
  });
});

describe("isolatedGitEnv", () => {
  it("gives git an empty global config, no system config, none of the caller's overrides and a fixed identity", () => {
    const dir = mkdtempSync(join(tmpdir(), "sf-offline-git-"));
    const saved = process.env.GIT_DIR;
    process.env.GIT_DIR = "/somewhere/else";
    try {
      const env = isolatedGitEnv(dir, "State Flow Demo");
      expect(env.GIT_DIR).toBeUndefined();
      expect(env.GIT_CONFIG_NOSYSTEM).toBe("1");
      expect(readFileSync(env.GIT_CONFIG_GLOBAL!, "utf8")).toBe("");
      expect(execFileSync("git", ["var", "GIT_AUTHOR_IDENT"], { env, encoding: "utf8" })).toMatch(
        /^State Flow Demo <demo@state-flow\.invalid> /,
      );
    } finally {
      if (saved === undefined) delete process.env.GIT_DIR;
      else process.env.GIT_DIR = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
