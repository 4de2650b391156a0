// Skill compilation through a real Pi session with a real skill directory that Pi's resource
// loader lists: the model reads SKILL.md with Pi's own read, and the next patch_state must carry a
// cwd artifact at that exact path with kind "skill" and a non-empty compilation; the cohort
// records the executed bytes' hash and skill-artifact-v1 in cwd provenance.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { bodyContentHash } from "../../../storage/core/promotions.ts";
import { cwdKey } from "../../../storage/layout.ts";
import { MEMORY_SKILL } from "../../../adapters/pi/skill-listing.ts";
import { call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

const SKILL = "---\nname: todo-style\ndescription: House style for todo CLI output\n---\n# Todo style\nShort lines.\n";

async function withSkill() {
  const h = await harness({ skills: true });
  const dir = join(h.cwd, ".pi", "skills", "todo-style");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "SKILL.md"), SKILL);
  await h.session.reload();
  return { h, path: join(dir, "SKILL.md") };
}

describe("Skill compilation", () => {
  it("Pi lists the skill; reading it obliges a kind:skill cwd artifact; the cohort records its hash", async () => {
    const { h, path } = await withSkill();
    await h.command("/state-flow-start");
    const skill = { description: "Todo output style", kind: "skill", compilation: { applies: "todo CLI output" } };
    h.script(
      call("read", { path }),
      call("patch_state", { cwd: { artifacts: { [path]: { description: "Todo output style" } } }, final: true }),
      call("patch_state", { cwd: { artifacts: { [path]: skill } }, final: true }),
      say("Compiled the skill."),
    );
    await h.prompt("Apply the todo style");
    expect(h.contexts[0]!.systemPrompt, "Pi's resource loader lists the skill").toContain("todo-style");
    const [read, refused, accepted] = h.toolResults();
    expect([read!.tool, read!.isError, refused!.isError, accepted!.isError]).toEqual(["read", false, true, false]);
    expect(refused!.text).toContain(`You read ${path} (a Skill): a Skill read needs a cwd artifact with kind "skill"`);
    expect(refused!.text).toContain('"kind":"skill","compilation"');
    const meta = JSON.parse(readFileSync(join(h.storeRoot, cwdKey(h.cwd), "meta.json"), "utf8")) as {
      artifacts: Record<string, unknown>;
    };
    expect(meta.artifacts[path]).toEqual({
      sourceHash: `sha256:${createHash("sha256").update(SKILL).digest("hex")}`,
      compilerRevision: "skill-artifact-v1",
      compiledAt: expect.any(String),
    });
    expect(h.accessor.read(0, "cwd").state.artifacts[path]).toEqual(skill);
  });

  it("a refresh replaces the whole old artifact; forged evidence is refused", async () => {
    const { h, path } = await withSkill();
    await h.command("/state-flow-start");
    const first = { description: "v1", kind: "skill", compilation: { applies: "a" }, tags: ["style"] };
    h.script(
      call("read", { path }),
      call("patch_state", { cwd: { artifacts: { [path]: first } }, final: true }),
      say("ok"),
    );
    await h.prompt("Compile it");
    const second = { description: "v2", kind: "skill", compilation: { routing: "b" } };
    const forged = { ...second, sourceHash: `sha256:${"0".repeat(64)}` };
    h.script(
      call("read", { path }),
      call("patch_state", { cwd: { artifacts: { [path]: forged } }, final: true }),
      call("patch_state", { cwd: { artifacts: { [path]: second } }, final: true }),
      say("ok"),
    );
    await h.prompt("Refresh it");
    const later = h.toolResults().slice(-2);
    expect(later.map((r) => r.isError)).toEqual([true, false]);
    expect(later[0]!.text).toMatch(/sourceHash.*is runtime-owned provenance/);
    expect(h.accessor.read(0, "cwd").state.artifacts[path], "no field of v1 survives").toEqual(second);
  });

  it("a Skill read is matched by its final tool_call arguments after another extension rewrote them", async () => {
    // Another extension, loaded after State Flow, redirects the model's read of notes.md to the Skill.
    let skillPath = "";
    const redirect = (pi: ExtensionAPI) => {
      pi.on("tool_call", (event) => {
        const input = event.input as { path?: string };
        if (event.toolName === "read" && input.path === "notes.md") input.path = skillPath;
      });
    };
    const h = await harness({ skills: true, extraExtensions: [redirect] });
    const dir = join(h.cwd, ".pi", "skills", "todo-style");
    mkdirSync(dir, { recursive: true });
    skillPath = join(dir, "SKILL.md");
    writeFileSync(skillPath, SKILL);
    writeFileSync(join(h.cwd, "notes.md"), "plain notes\n");
    await h.session.reload();
    await h.command("/state-flow-start");
    const skill = { description: "Todo output style", kind: "skill", compilation: { applies: "todo CLI output" } };
    h.script(
      call("read", { path: "notes.md" }),
      call("patch_state", { session: { working: { read: "notes" } }, final: true }),
      call("patch_state", { cwd: { artifacts: { [skillPath]: skill } }, final: true }),
      say("Compiled."),
    );
    await h.prompt("Read the notes");
    const [read, refused, accepted] = h.toolResults();
    expect(read!.text, "the rewrite is what ran").toContain("# Todo style");
    // Matched by the arguments the model sent (notes.md), this read would owe nothing and the first
    // patch would be accepted.
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toContain(`You read ${skillPath} (a Skill)`);
    expect(accepted!.isError).toBe(false);
    expect(h.accessor.read(0, "cwd").state.artifacts[skillPath]).toEqual(skill);
  });

  it("a read whose tool_call State Flow never saw is matched by its execution-start arguments", async () => {
    const { h, path } = await withSkill();
    await h.command("/state-flow-start");
    // A read executed without a tool_call event reaching State Flow: Pi's runner delivers only the
    // execution's start and end, as a Pi that emits no tool_call for it would.
    const unseenRead = async () => {
      const runner = h.session.extensionRunner;
      await runner.emit({ type: "tool_execution_start", toolCallId: "unseen", toolName: "read", args: { path } });
      await runner.emit({
        type: "tool_execution_end",
        toolCallId: "unseen",
        toolName: "read",
        result: { content: [{ type: "text", text: SKILL }] },
        isError: false,
      });
      return fauxAssistantMessage([fauxToolCall("patch_state", { final: true })], { stopReason: "toolUse" });
    };
    const skill = { description: "Todo output style", kind: "skill", compilation: { applies: "todo CLI output" } };
    h.script(
      unseenRead as never,
      call("patch_state", { cwd: { artifacts: { [path]: skill } }, final: true }),
      say("Compiled."),
    );
    await h.prompt("Apply the todo style");
    const [refused, accepted] = h.toolResults();
    // Were the execution-start arguments ignored, nothing would be owed and final:true would pass.
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toContain(`You read ${path} (a Skill)`);
    expect(accepted!.isError).toBe(false);
  });

  it("memory curation never starts by itself: a state past the curation mark only gets a suggestion", async () => {
    // The package's Skill, where Pi finds it, beside another Skill so Pi lists both to the model.
    const { h } = await withSkill();
    const memory = join(h.cwd, ".pi", "skills", MEMORY_SKILL);
    mkdirSync(memory, { recursive: true });
    writeFileSync(join(memory, "SKILL.md"), readFileSync(join(repoRoot, "skills", MEMORY_SKILL, "SKILL.md")));
    await h.session.reload();
    await h.command("/state-flow-start");
    const notes = "n".repeat(40_000);
    h.script(call("patch_state", { cwd: { working: { notes } }, final: true }), say("stored"));
    await h.prompt("store the notes");
    h.script(call("patch_state", { final: true }), say("second"));
    await h.prompt("anything else");
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message, "the state is past the mark").toContain("consider curating it");
    // Anything started in the background would ask the model (no scripted step is left, so it would fail
    // visibly), read the Skill, or change the state; give it time to.
    await new Promise((r) => setTimeout(r, 500));
    await h.session.waitForIdle();
    expect(h.contexts[0]!.systemPrompt, "the model could invoke it").toContain(`<name>${MEMORY_SKILL}</name>`);
    expect(h.contexts, "one inference per scripted step, no more").toHaveLength(4);
    expect(h.faux.state.callCount).toBe(4);
    // What the run added (Pi 1.6 also keeps its system prompt, with the Skill listing, among them).
    const trace = JSON.stringify(h.session.messages.filter((m) => (m.role as string) !== "system"));
    expect(trace).not.toContain(`${MEMORY_SKILL}/SKILL.md`);
    expect(trace).not.toContain(`/skill:${MEMORY_SKILL}`);
    expect(h.accessor.read(0, "cwd").state.working).toEqual({ notes });
  });
});

describe("memory promotions through patch_state and /state-flow-status", () => {
  it("a malformed record is refused by name; status counts the valid ones with their pointers", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const promotions = {
      p1: { status: "pending", owner: "notes-app" },
      p2: { status: "accepted", owner: "notes-app", pointer: "notes://memo/42", revision: "r7" },
    };
    h.script(
      call("patch_state", { global: { working: { memory_promotions: { p3: { status: "accepted", owner: "x" } } } } }),
      call("patch_state", { global: { working: { memory_promotions: promotions } }, final: true }),
      say("Recorded."),
    );
    await h.prompt("Record the promotions");
    const [refused, accepted] = h.toolResults();
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toMatch(/memory_promotions\.p3.*accepted promotion needs the exact destination pointer/);
    expect(accepted!.isError).toBe(false);
    await h.command("/state-flow-status");
    const status = h.lastNotice()!.message;
    expect(status).toContain("memory-bearing scopes: global");
    expect(status).toContain("promotions: 1 pending, 1 accepted (p2 → notes://memo/42 @ r7)");
    expect(status).toContain("owner mode: State Flow, with copies held by notes-app");
    expect(status).toContain("fallback: not active");
    const failed = { status: "failed", owner: "notes-app", error: "offline" };
    const fail = { global: { working: { memory_promotions: { p1: failed } } }, final: true };
    h.script(call("patch_state", fail), say("Noted."));
    await h.prompt("The notes app is offline");
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain(
      "fallback: active for 1 promotion(s) — p1 (failed, notes-app): its record names no body",
    );
  });

  it("the only copy of a promoted body is kept until its promotion proves the destination holds it", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const record = { status: "pending", owner: "notes-app", body: "/cwd/working/release_plan" };
    h.script(
      call("patch_state", {
        global: { working: { memory_promotions: { p1: record } } },
        cwd: { working: { release_plan: "tag v2, then announce" } },
        final: true,
      }),
      say("Recorded."),
    );
    await h.prompt("Promote the release plan to the notes app");
    const content = bodyContentHash("tag v2, then announce");
    const proven = { ...record, status: "accepted", pointer: "notes://memo/42", revision: "r7", content };
    h.script(
      call("patch_state", { cwd: { working: { release_plan: null } } }),
      call("patch_state", {
        global: { working: { memory_promotions: { p1: proven } } },
        cwd: { working: { release_plan: null } },
        final: true,
      }),
      say("Promoted."),
    );
    await h.prompt("The notes app has it now; drop our copy");
    const [refused, accepted] = h.toolResults().slice(-2);
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toContain("removes /cwd/working/release_plan, which may be the only copy");
    expect(refused!.text).toContain("promotion p1 promotes it, but that record is pending, not accepted");
    expect(refused!.text, "the refusal names the proof to record").toContain(`"content":"${content}"`);
    expect(accepted!.isError, "doing what the refusal says works").toBe(false);
    expect(h.accessor.read(0, "cwd").state.working.release_plan).toBeUndefined();
    expect(h.accessor.read(0, "global").state.working.memory_promotions).toEqual({ p1: proven });
  });

  it("a record that names no body cannot replace one by a pointer; the refusal's proof can", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const plan = { steps: ["tag v2", "announce"] };
    h.script(call("patch_state", { cwd: { working: { release_plan: plan } }, final: true }), say("Noted."));
    await h.prompt("Remember the release plan");
    const head = () => execFileSync("git", ["-C", h.storeRoot, "rev-parse", "HEAD"], { env: h.env }).toString();
    const before = head();
    const record = { status: "accepted", owner: "notes-app", pointer: "notes://memo/42", revision: "r7" };
    const stub = { cwd: { working: { release_plan: { steps: null, see: "notes://memo/42" } } } };
    h.script(call("patch_state", { global: { working: { memory_promotions: { p1: record } } }, ...stub }), say("?"));
    await h.prompt("The notes app has it; keep only a pointer");
    const refused = h.toolResults().at(-1)!;
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/memory_promotions\.p1: This patch removes \/cwd\/working\/release_plan\/steps/);
    const hash = /"content":"(sha256:[0-9a-f]{64})"/.exec(refused.text)![1]!;
    expect(hash).toBe(bodyContentHash(plan));
    expect(head(), "nothing was written").toBe(before);
    expect(h.accessor.read(0, "cwd").state.working.release_plan).toEqual(plan);
    const proven = { ...record, content: hash, body: "/cwd/working/release_plan" };
    h.script(
      call("patch_state", { global: { working: { memory_promotions: { p1: proven } } }, ...stub, final: true }),
      say("Promoted."),
    );
    await h.prompt("Record the proof and keep only the pointer");
    expect(h.toolResults().at(-1)!.isError).toBe(false);
    expect(h.accessor.read(0, "cwd").state.working.release_plan).toEqual({ see: "notes://memo/42" });
  });
});
