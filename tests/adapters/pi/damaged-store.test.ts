// A shared scope's files damaged outside State Flow, met through a real Pi session on a file-only
// store (the case where nothing else would notice): a second session's start, the first session's
// next patch and its resume each name the damaged file instead of reading an older state, and doing
// what the message says makes the same steps work.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PiHarness, call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

function cutLastRecord(path: string): void {
  const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
  writeFileSync(path, `${lines.slice(0, -1).join("\n")}\n`);
}

function dropStreamRecord(path: string): void {
  const meta = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  delete meta.stream;
  writeFileSync(path, `${JSON.stringify(meta, null, 2)}\n`);
}

async function twoGlobalPatches(h: PiHarness): Promise<void> {
  await h.command("/state-flow-start");
  h.script(call("patch_state", { global: { working: { g: 1 } }, final: true }), say("one"));
  await h.prompt("remember g=1");
  h.script(call("patch_state", { global: { working: { g: 2 } }, final: true }), say("two"));
  await h.prompt("now g=2");
}

describe("a damaged shared scope, through Pi (file-only store)", () => {
  it("a second session's start names the cut tail; deleting the stream record as told lets it start", async () => {
    const a = await harness({ git: false, sessionKind: "file" });
    await twoGlobalPatches(a);
    const patches = join(a.storeRoot, "patches.jsonl");
    cutLastRecord(patches);

    const b = await harness({ git: false, sessionKind: "file", shareWith: a });
    await b.command("/state-flow-start");
    const said = b.notices.map((n) => n.message).join("\n");
    expect(said).toContain(`${patches} holds 1 record ending at step 1`);
    expect(said).toContain(`delete the "stream" member of ${join(a.storeRoot, "meta.json")}`);
    expect(b.accessor.episode()).not.toMatch(/^active/);

    dropStreamRecord(join(a.storeRoot, "meta.json"));
    await b.command("/state-flow-start");
    expect(b.accessor.episode()).toMatch(/^active/);
    expect(b.accessor.read(0, "global").state.working).toEqual({ g: 1 });
  });

  it("the open session's next patch names the damage, writes nothing, goes on once the bytes are back", async () => {
    const a = await harness({ git: false, sessionKind: "file" });
    await twoGlobalPatches(a);
    const patches = join(a.storeRoot, "patches.jsonl");
    const written = readFileSync(patches);
    writeFileSync(patches, "");

    a.script(call("patch_state", { session: { working: { next: 1 } }, final: true }), say("three"));
    await a.prompt("go on");
    const results = a.session.messages.filter((m) => m.role === "toolResult").map((m) => JSON.stringify(m.content));
    expect(results[results.length - 1]).toContain(`${patches} is empty`);
    expect(readFileSync(patches, "utf8")).toBe("");

    writeFileSync(patches, written);
    a.script(call("patch_state", { session: { working: { next: 1 } }, final: true }), say("three"));
    await a.prompt("go on");
    expect(a.accessor.read(0).state.working).toEqual({ g: 2, next: 1 });
  });

  it("a resume names the damage, refuses prompts, and restores once the file holds its bytes again", async () => {
    const a = await harness({ git: false, sessionKind: "file" });
    await twoGlobalPatches(a);
    const file = a.session.sessionManager.getSessionFile()!;
    const patches = join(a.storeRoot, "patches.jsonl");
    const written = readFileSync(patches);
    cutLastRecord(patches);

    const resumed = await harness({ git: false, sessionKind: "file", shareWith: a, openFile: file });
    expect(resumed.accessor.episode()).toMatch(/failedClosed/);
    expect(resumed.notices[0]?.message).toContain(`Reason: The global scope's files disagree: ${patches}`);
    resumed.script(say("should not run"));
    await resumed.prompt("what is g?");
    const refusal = resumed.notices.map((n) => n.message).join("\n");
    expect(refusal).toContain(`${patches} holds 1 record ending at step 1`);
    expect(refusal).toContain("/reload");

    writeFileSync(patches, written);
    await resumed.session.reload();
    expect(resumed.accessor.episode()).toMatch(/^active/);
    expect(resumed.accessor.read(0, "global").state.working).toEqual({ g: 2 });
  });
});
