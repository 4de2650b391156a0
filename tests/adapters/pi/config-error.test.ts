// An invalid state-flow.json in a real Pi session: Pi loads and works, State Flow registers
// nothing but its named error (at each session start, and as the answer of its three commands),
// and /reload after the fix loads State Flow normally.

import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

/** A harness whose agent dir holds `text` as state-flow.json before State Flow loads. */
async function withConfigText(text: string): Promise<PiHarness> {
  const first = await harness();
  writeFileSync(join(first.agentDir, "state-flow.json"), text);
  return harness({ shareWith: first });
}

const errors = (h: PiHarness) => h.notices.filter((n) => n.level === "error").map((n) => n.message);

describe("an invalid state-flow.json", () => {
  it("malformed JSON: Pi starts and answers; State Flow says which file, what and how to fix it, once", async () => {
    const h = await withConfigText('{ "autoStart": tru');
    const file = join(h.agentDir, "state-flow.json");
    expect(h.loadErrors, "the extension loaded: Pi has nothing to fail on").toEqual([]);
    expect(errors(h)).toHaveLength(1);
    const [message] = errors(h);
    expect(message).toContain(`State Flow is off: ${file}: invalid JSON (`);
    expect(message).toContain("fix the file or remove it to use defaults. Then run /reload (or restart Pi)");
    expect(message, "one line").not.toContain("\n");
    // Nothing of State Flow is registered: no tools, no runtime, no store, no context.
    expect(h.activeTools).not.toContain("patch_state");
    expect(h.session.getAllTools().map((t) => t.name)).not.toContain("read_state");
    expect(h.accessor).toBeUndefined();
    h.script(say("Plain Pi answer."));
    await h.prompt("Hello");
    expect(h.contexts).toHaveLength(1);
    expect(h.contexts[0]!.systemPrompt).not.toContain("State Flow protocol");
    expect(contextText(h.contexts[0]!)).not.toContain("state[0]");
    expect(h.contexts[0]!.tools!.map((t) => t.name)).not.toContain("patch_state");
    expect(errors(h), "a prompt repeats nothing").toHaveLength(1);
    expect(existsSync(h.storeRoot)).toBe(false);
  });

  it("each State Flow command answers with the error and does nothing else", async () => {
    const h = await harness({ config: { autoStart: "yes" } });
    const file = join(h.agentDir, "state-flow.json");
    const expected =
      `State Flow is off: ${file}: "autoStart" = "yes" must be true or false; correct the value, ` +
      "or remove the key to use its default. Then run /reload (or restart Pi) to load it; " +
      "until then it adds no tools and reads or writes no state.";
    expect(errors(h)).toEqual([expected]);
    const queries = ["/state-flow-show", "/state-flow-history --all", "/state-flow-diff 1 0"];
    for (const command of ["/state-flow-start", "/state-flow-status", "/state-flow-stop", ...queries]) {
      await h.command(command);
      expect(h.lastNotice(), command).toEqual({ message: expected, level: "error" });
    }
    expect(h.contexts, "no command reached the model").toHaveLength(0);
    expect(h.session.messages).toHaveLength(0);
    expect(h.activeTools).not.toContain("patch_state");
    expect(existsSync(h.storeRoot)).toBe(false);
    expect(h.extensionErrors()).toEqual([]);
  });

  it("after the file is fixed, /reload loads State Flow normally; while still invalid it says so again", async () => {
    const h = await withConfigText("[]");
    const file = join(h.agentDir, "state-flow.json");
    expect(errors(h)).toEqual([expect.stringContaining(`${file}: must be a JSON object such as {"autoStart": false}`)]);
    await h.session.reload();
    expect(errors(h), "reloading an unchanged invalid file: the error again, once").toHaveLength(2);
    expect(h.accessor).toBeUndefined();

    // The advice: fix the file (here: a valid setting), then /reload.
    writeFileSync(file, JSON.stringify({ logging: false }));
    await h.session.reload();
    expect(errors(h)).toHaveLength(2);
    expect(h.accessor.episode()).toBe("off");
    await h.command("/state-flow-start");
    expect(h.activeTools).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
    h.script(call("patch_state", { session: { working: { fixed: true } }, final: true }), say("Loaded."));
    await h.prompt("record it");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.read(0, "session").state).toMatchObject({ working: { fixed: true }, response: "Loaded." });
    expect(existsSync(h.storeRoot)).toBe(true);
  });

  it("the other advice, removing the file, loads State Flow with its defaults after /reload", async () => {
    const h = await harness({ config: { autostart: true } });
    expect(errors(h)).toEqual([
      expect.stringContaining(
        '"autostart" = true is not a known setting (known: directory, autoStart, logging, ' +
          "remotePublication); correct the key's spelling, or remove it. Then run /reload",
      ),
    ]);
    rmSync(join(h.agentDir, "state-flow.json"));
    await h.session.reload();
    expect(h.accessor.episode()).toBe("off");
    await h.command("/state-flow-start");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    expect(errors(h)).toHaveLength(1);
  });
});
