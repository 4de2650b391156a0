// Runs Pi starts without a user prompt, through a real Pi session on whichever Pi version the test
// process loaded (npm test: 0.84.4; npm run test:pi-1.6: 1.6.0): a custom message another
// extension sends with triggerTurn, and a follow-up the user queues while a run is streaming.

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { RUN_ANCHOR } from "../../../adapters/pi/context.ts";
import { piVersionWarning, runTriggerOf } from "../../../adapters/pi/pi-versions.ts";

/** A message run whose starting message Pi did not name. */
const UNNAMED_MESSAGE_RUN = { kind: "message", source: null } as const;
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";
import { PI_VERSION } from "../../support/pi-version.ts";

const create = harnessFactory();

describe("runTriggerOf (before_agent_start in either Pi version)", () => {
  it("a prompt starts a user run; a custom message (Pi ≥ 1.2, no prompt) names its source", () => {
    expect(runTriggerOf({ prompt: "Fix it" })).toEqual({ kind: "prompt", text: "Fix it" });
    expect(runTriggerOf({ prompt: "" })).toEqual({ kind: "prompt", text: "" });
    expect(runTriggerOf({ messageType: "custom", message: { customType: "reminder" } })).toEqual({
      kind: "message",
      source: "reminder",
    });
    expect(runTriggerOf({ messageType: "custom", message: {} })).toEqual(UNNAMED_MESSAGE_RUN);
    expect(runTriggerOf({})).toEqual(UNNAMED_MESSAGE_RUN);
  });

  it('an image sent without words is a request, not "no request"', () => {
    const image = { type: "image", data: "", mimeType: "image/png" };
    expect(runTriggerOf({ prompt: "", images: [image] })).toEqual({
      kind: "prompt",
      text: "(an image without text: see the user's message)",
    });
    expect(runTriggerOf({ prompt: " ", images: [image, image] })).toEqual({
      kind: "prompt",
      text: "(2 images without text: see the user's message)",
    });
    expect(runTriggerOf({ prompt: "What is this?", images: [image] })).toEqual({
      kind: "prompt",
      text: "What is this?",
    });
  });
});

describe(`an image-only prompt (Pi ${PI_VERSION})`, () => {
  it("is the run's request in the runtime context", async () => {
    const h = await create();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("a cat"));
    // (a 1×1 PNG)
    const data = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    await h.session.prompt("", { images: [{ type: "image", data, mimeType: "image/png" }] });
    await h.session.waitForIdle();
    const seen = contextText(h.contexts[0]!);
    expect(seen).toContain("(an image without text: see the user's message)");
    expect(seen).not.toContain("no user request in this session so far");
  });
});

describe("piVersionWarning", () => {
  it("is silent on 0.84.x from 0.84.4 and on 1.x (this run's Pi included); names the tested versions otherwise", () => {
    for (const version of ["0.84.4", "0.84.9", "1.0.0", "1.6.0", "1.12.3", PI_VERSION]) {
      expect(piVersionWarning(version), version).toBeNull();
    }
    for (const version of ["0.84.3", "0.83.0", "0.86.1", "2.0.0"]) {
      expect(piVersionWarning(version), version).toMatch(
        new RegExp(`tested on 0\\.84\\.4 and 1\\.6\\.0; this is Pi ${version.replace(/\./g, "\\.")}\\.`),
      );
    }
  });
});

/** A foreign extension with a command that starts a run the way a reminder or a subagent would. */
function reminderExtension(pi: ExtensionAPI): void {
  pi.registerCommand("remind", {
    description: "test: start a run with a custom message",
    handler: async () => {
      pi.sendMessage(
        { customType: "reminder", content: "Reminder: check the build.", display: true },
        {
          triggerTurn: true,
        },
      );
    },
  });
}

async function started(): Promise<PiHarness> {
  const h = await create({ extraExtensions: [reminderExtension] });
  await h.command("/state-flow-start");
  h.script(call("patch_state", { session: { working: { goal: "parser" } }, final: true }), say("Parser fixed."));
  await h.prompt("Fix the parser");
  expect(h.accessor.read(0).state.response).toBe("Parser fixed.");
  return h;
}

function anchors(h: PiHarness): number {
  return h.session.messages.filter((m) => m.role === "custom" && m.customType === RUN_ANCHOR).length;
}

describe(`runs without a user prompt (Pi ${PI_VERSION})`, () => {
  it("a run a custom message starts continues the current specification, with its own resolution", async () => {
    const h = await started();
    const before = h.contexts.length;
    h.script(
      say("Build looks fine."),
      call("patch_state", { session: { working: { build: "checked" } }, final: true }),
      say("Build checked."),
    );
    await h.command("/remind");
    await h.session.waitForIdle();
    expect(h.faux.getPendingResponseCount(), "the run used every scripted step").toBe(0);
    expect(h.extensionErrors()).toEqual([]);

    const first = contextText(h.contexts[before]!);
    expect(first).toMatch(/Current specification[^\n]*\nFix the parser\n/);
    expect(first).toContain("This run was started by a message (reminder), not by a new user request");
    expect(first).toContain("Reminder: check the build.");
    expect(first, "the earlier run is state now, not transcript").not.toContain("Parser fixed.\n");
    expect(h.contexts[before]!.systemPrompt).toContain("## State Flow protocol");
    const answered = h.contexts[before]!.messages.filter((m) => m.role === "assistant");
    expect(answered, "the previous run's trajectory is not replayed").toEqual([]);

    // The first answer had no final patch: the run's own resolution steered, then accepted the second.
    expect(contextText(h.contexts[before + 1]!)).toContain("[State Flow resolution 1/");
    expect(h.accessor.read(0).state).toMatchObject({ working: { goal: "parser", build: "checked" } });
    expect(h.accessor.read(0).state.response).toBe("Build checked.");
    expect(anchors(h), "each run has its anchor").toBe(2);
  });

  it("a follow-up queued during a run is added to the specification, and its answer is resolved too", async () => {
    const h = await create();
    await h.command("/state-flow-start");
    h.script(
      () => {
        void h.session.prompt("Also update the docs", { streamingBehavior: "followUp" });
        return call("patch_state", { session: { working: { goal: "parser" } }, final: true })();
      },
      say("Parser fixed."),
      call("patch_state", { session: { working: { docs: "updated" } }, final: true }),
      say("Docs updated."),
    );
    await h.prompt("Fix the parser");
    expect(h.faux.getPendingResponseCount()).toBe(0);
    expect(h.extensionErrors()).toEqual([]);
    const followUp = contextText(h.contexts[2]!);
    expect(followUp).toMatch(/Current specification[^\n]*\nFix the parser\n/);
    expect(followUp).toContain("Added by the user during the run, in order (newest last):\n- Also update the docs");
    expect(followUp).toContain("Also update the docs");
    // The follow-up's answer was resolved by a fresh resolution (not dropped after the first was accepted).
    expect(h.accessor.read(0).state.response).toBe("Docs updated.");
    expect(h.accessor.read(0).state.working).toEqual({ goal: "parser", docs: "updated" });
    const responses = [1, 2, 3].map((offset) => h.accessor.read(offset).state.response);
    expect(responses).toContain("Parser fixed.");
  });

  it("a run that starts after the specification changed shows the new prompt alone", async () => {
    const h = await started();
    h.script(call("patch_state", { final: true }), say("Tests added."));
    await h.prompt("Add tests");
    const text = contextText(h.contexts[h.contexts.length - 1]!);
    expect(text).toMatch(/Current specification[^\n]*\nAdd tests\n/);
    expect(text).not.toContain("Added by the user");
    expect(text).not.toContain("started by a message");
  });
});
