// Selecting a run's answer with Pi's /tree restores the state whose response is that answer (issue
// 28). Pi puts the leaf on the selected assistant message itself, while State Flow records the
// answer's state in a checkpoint entry written after it (adapters/pi/branch.ts markerEntries).
// Real Pi sessions on a Git store and on a file-only one, which keeps only the current cohort.
// Pi's /tree also lists each run's anchor: what it shows, and what selecting it restores.
import { TreeSelectorComponent, initTheme, type SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { RUN_ANCHOR, RUN_ANCHOR_TEXT } from "../../../adapters/pi/context.ts";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

/** The id of the assistant message that answered `text`. */
function answerId(h: PiHarness, text: string): string {
  const answer = h.session.sessionManager
    .getEntries()
    .find(
      (e: SessionEntry) =>
        e.type === "message" &&
        e.message.role === "assistant" &&
        e.message.content.some((block) => block.type === "text" && block.text === text),
    );
  if (!answer) throw new Error(`no answer "${text}"`);
  return answer.id;
}

/** The revision of the checkpoint written right after that answer. */
function checkpointAfter(h: PiHarness, id: string): string {
  const entry = h.session.sessionManager
    .getEntries()
    .find((e) => e.parentId === id && e.type === "custom" && e.customType === "state-flow");
  return (entry as { data: { revision: string } }).data.revision;
}

/** Two runs answering "fixed." (working v:1) then "done D." (working v:2). */
async function twoRuns(git: boolean): Promise<PiHarness> {
  const h = await harness({ sessionKind: "file", ...(git ? {} : { git: false }) });
  await h.command("/state-flow-start");
  h.script(call("patch_state", { session: { working: { v: 1 } }, final: true }), say("fixed."));
  await h.prompt("first");
  h.script(call("patch_state", { session: { working: { v: 2 } }, final: true }), say("done D."));
  await h.prompt("second");
  expect(h.accessor.read(0).state.response).toBe("done D.");
  return h;
}

for (const git of [true, false]) {
  describe(`/tree onto an answer (${git ? "Git" : "file-only"} store)`, () => {
    it("the newest answer restores its own state, also after a reload", async () => {
      const h = await twoRuns(git);
      await h.session.navigateTree(answerId(h, "done D."));
      // the answer's off-branch record is put on the branch, right after the selected answer
      const leaf = h.session.sessionManager.getLeafEntry()!;
      expect([leaf.type, leaf.parentId]).toEqual(["custom", answerId(h, "done D.")]);
      expect(h.accessor.episode()).toBe("active.steady");
      expect(h.accessor.read(0).state).toMatchObject({ response: "done D.", working: { v: 2 } });
      await h.session.reload();
      expect(h.accessor.episode()).toBe("active.steady");
      expect(h.accessor.read(0).state.response).toBe("done D.");
      h.script(call("patch_state", { session: { working: { v: 3 } }, final: true }), say("next."));
      await h.prompt("third");
      expect(h.accessor.read(0).state).toMatchObject({ response: "next.", working: { v: 3 } });
      expect(h.extensionErrors()).toEqual([]);
    });
  });
}

describe("/tree onto an older answer (Git store)", () => {
  it("restores that answer's state, with or without a branch summary, and the next prompt runs from it", async () => {
    const h = await twoRuns(true);
    await h.session.navigateTree(answerId(h, "fixed."));
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0).state).toMatchObject({ response: "fixed.", working: { v: 1 } });
    // With a summary the leaf is a branch_summary entry, a child of the answer.
    await h.session.navigateTree(answerId(h, "done D."));
    h.script(say("TREE SUMMARY"));
    await h.session.navigateTree(answerId(h, "fixed."), { summarize: true });
    const leaf = h.session.sessionManager.getLeafEntry()!;
    expect(h.session.sessionManager.getEntry(leaf.parentId!)?.type).toBe("branch_summary");
    expect(h.accessor.read(0).state).toMatchObject({ response: "fixed.", working: { v: 1 } });

    h.script(call("patch_state", { session: { working: { v: 3 } }, final: true }), say("again."));
    await h.prompt("third");
    const seen = contextText(h.contexts[h.contexts.length - 2]!);
    expect(seen).toContain('"v": 1');
    expect(seen).not.toContain('"v": 2');
    expect(h.accessor.read(0).state).toMatchObject({ response: "again.", working: { v: 3 } });
    expect(h.accessor.read(1).state).toMatchObject({ response: "fixed.", working: { v: 3 } });
    expect(h.extensionErrors()).toEqual([]);
  });
});

describe("/tree onto an older answer, then a run that records nothing new (Git store)", () => {
  it("stays on that answer after a reload: the restore records the answer's checkpoint on the branch", async () => {
    const h = await twoRuns(true);
    const fixed = checkpointAfter(h, answerId(h, "fixed."));
    await h.session.navigateTree(answerId(h, "fixed."));
    const leaf = h.session.sessionManager.getLeafEntry() as { type: string; data?: { revision?: string } };
    expect(leaf.type === "custom" && leaf.data?.revision, "the answer's record is on the branch now").toBe(fixed);
    // no semantic change and the same answer: no new revision is recorded by this run
    h.script(call("patch_state", { final: true }), say("fixed."));
    await h.prompt("again, nothing new");
    await h.session.reload();
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0).state).toMatchObject({ response: "fixed.", working: { v: 1 } });
    expect(h.extensionErrors()).toEqual([]);
  });
});

describe("/tree onto an older answer (file-only store)", () => {
  it("fails closed on the answer's own cohort (the store holds it no more); the newest answer recovers", async () => {
    const h = await twoRuns(false);
    const fixed = checkpointAfter(h, answerId(h, "fixed."));
    await h.session.navigateTree(answerId(h, "fixed."));
    // A file-only store keeps only the current cohort: the answer's pointer is kept and named, never
    // replaced by the current files nor by the checkpoint before the answer.
    expect(h.accessor.episode()).toBe("failedClosed.unproven");
    expect(h.lastNotice()).toMatchObject({ level: "error" });
    expect(h.lastNotice()!.message).toContain(`The file cohort ${fixed} is no longer available`);
    const inferences = h.contexts.length;
    await h.prompt("refused");
    expect(h.contexts.length, "a failed-closed branch runs no inference").toBe(inferences);

    await h.session.navigateTree(answerId(h, "done D."));
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0).state).toMatchObject({ response: "done D.", working: { v: 2 } });
    h.script(call("patch_state", { session: { working: { v: 3 } }, final: true }), say("again."));
    await h.prompt("third");
    expect(h.accessor.read(0).state).toMatchObject({ response: "again.", working: { v: 3 } });
    expect(h.extensionErrors()).toEqual([]);
  });
});

/**
 * The lines Pi's /tree shows in its default filter, drawn by Pi's own tree component (without
 * colours). Its filter (0.84.4 dist/modes/interactive/components/tree-selector.js:257-281, 1.6.0
 * :244 and :261-286) hides only label, custom, model_change, thinking_level_change and session_info
 * entries (and 1.6's context_edit and usage): a custom message is listed whatever its `display`.
 */
function treeLines(h: PiHarness): string[] {
  initTheme("dark", false);
  const manager = h.session.sessionManager;
  const tree = new TreeSelectorComponent(
    manager.getTree(),
    manager.getLeafId(),
    60,
    () => {},
    () => {},
  );
  return tree
    .getTreeList()
    .render(200)
    .map((line) => line.replace(/\x1b\[[0-9;]*m/g, "").trim());
}

describe("/tree lists each run's anchor", () => {
  it("in words a person reads; selecting it returns to the request unanswered, with the state before it", async () => {
    const h = await twoRuns(true);
    const anchors = h.session.sessionManager
      .getEntries()
      .filter((e) => e.type === "custom_message" && e.customType === RUN_ANCHOR);
    expect(anchors).toHaveLength(2);
    // Pi has no way to keep a context message out of /tree (a custom entry, which it hides, never
    // reaches the context the projection reads the run's start from): the node says what it is.
    const lines = treeLines(h);
    expect(lines.filter((line) => line.includes(`[${RUN_ANCHOR}]: ${RUN_ANCHOR_TEXT}`))).toHaveLength(2);
    expect(lines.join("\n")).not.toContain("[State Flow run]");

    // Pi puts the leaf on a selected custom message's parent (the request) and offers its text to the editor.
    const second = anchors[1]!;
    const result = await h.session.navigateTree(second.id);
    expect(result.editorText).toBe(RUN_ANCHOR_TEXT);
    const leaf = h.session.sessionManager.getLeafEntry()!;
    expect(leaf.type === "message" && leaf.message.role === "user" && leaf.message.content).toEqual([
      { type: "text", text: "second" },
    ]);
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.accessor.read(0).state).toMatchObject({ response: "fixed.", working: { v: 1 } });
    expect(h.extensionErrors()).toEqual([]);
  });
});
