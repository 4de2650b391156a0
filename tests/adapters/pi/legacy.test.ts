// A predecessor's store in a real Pi session: legacy state.json snapshots become checkpoints when
// /state-flow-start establishes the runtime (never before), and contract.compiled_skills entries
// become Skill artifacts whose provenance says which sources could be verified.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cwdKey, sessionKeyFromFile, sessionKeyFromHeader } from "../../../storage/layout.ts";
import { call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const SKILL = "---\nname: deploy\ndescription: How this project deploys\n---\n# Deploy\nRun make deploy.\n";
const GONE = "/nowhere/skills/retired/SKILL.md";
const GONE_HASH = `sha256:${"ab".repeat(32)}`;

function write(path: string, value: unknown): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

async function legacyProject() {
  const h = await harness({ skills: true });
  const skill = join(h.cwd, ".pi", "skills", "deploy", "SKILL.md");
  mkdirSync(join(skill, ".."), { recursive: true });
  writeFileSync(skill, SKILL);
  const cwdDir = join(h.storeRoot, cwdKey(h.cwd));
  const sessionDir = join(cwdDir, sessionKeyFromHeader(h.session.sessionManager.getHeader()!));
  write(join(h.storeRoot, "state.json"), {
    artifacts: {},
    contract: { tone: "terse" },
    working: {},
    response: "",
  });
  write(join(cwdDir, "state.json"), {
    artifacts: {},
    contract: {
      deploy: "make deploy",
      compiled_skills: {
        [skill]: { routing: "deploy requests", constraints: ["never on Fridays"] },
        [GONE]: { routing: "old releases", hash: GONE_HASH, compiled_at: "2026-01-02T03:04:05.000Z" },
      },
    },
    working: { next: "tag the release" },
    response: "",
  });
  write(join(sessionDir, "state.json"), { artifacts: {}, contract: {}, working: { step: 7 }, response: "done" });
  return { h, skill, cwdDir, sessionDir };
}

describe("a predecessor's store", () => {
  it("is migrated when /state-flow-start establishes the runtime, and the model sees the same state", async () => {
    const { h, skill, cwdDir, sessionDir } = await legacyProject();
    const before = readFileSync(join(cwdDir, "state.json"), "utf8");
    await h.command("/state-flow-status");
    expect(readFileSync(join(cwdDir, "state.json"), "utf8"), "status is read-only").toBe(before);

    await h.command("/state-flow-start");
    const said = h.notices.map((n) => n.message).join("\n");
    expect(said).toContain("migrated the legacy state.json of the global, cwd, session scope(s) into checkpoints");
    expect(said).toContain(`moved 2 legacy Skill compilation(s) from contract.compiled_skills into Skill artifacts`);
    expect(said).toContain(`Unverified (source unreadable): ${GONE}`);
    for (const dir of [h.storeRoot, cwdDir, sessionDir]) expect(existsSync(join(dir, "state.json"))).toBe(false);

    const cwd = h.accessor.read(0, "cwd").state;
    expect(cwd.contract).toEqual({ deploy: "make deploy" });
    expect(cwd.artifacts[skill]).toEqual({
      description: expect.stringContaining("migrated from contract.compiled_skills"),
      kind: "skill",
      compilation: { routing: "deploy requests", constraints: ["never on Fridays"] },
    });
    expect(cwd.artifacts[GONE]).toEqual({
      description: expect.any(String),
      kind: "skill",
      compilation: { routing: "old releases" },
    });
    const meta = JSON.parse(readFileSync(join(cwdDir, "meta.json"), "utf8")) as { artifacts: object };
    expect(meta.artifacts).toEqual({
      [skill]: {
        sourceHash: `sha256:${createHash("sha256").update(SKILL).digest("hex")}`,
        compilerRevision: "skill-artifact-v1",
      },
      [GONE]: {
        sourceHash: GONE_HASH,
        compilerRevision: "skill-artifact-v1",
        compiledAt: "2026-01-02T03:04:05.000Z",
        unverified: true,
      },
    });
    expect(h.accessor.read(0, "global").state.contract).toEqual({ tone: "terse" });
    expect(h.accessor.read(0, "session").state).toMatchObject({ working: { step: 7 }, response: "done" });

    h.script(call("patch_state", { session: { working: { step: 8 } }, final: true }), say("Step 8."));
    await h.prompt("Next step");
    const context = JSON.stringify(h.contexts[0]!.messages);
    for (const text of ["never on Fridays", "tag the release", "terse"]) expect(context).toContain(text);
    expect(context, "the retired store is gone from the state shown").not.toContain('compiled_skills\\": {');
    const log = execFileSync("git", ["-C", h.storeRoot, "log", "--format=%s"], { env: h.env, encoding: "utf8" });
    expect(log.split("\n").reverse().filter(Boolean).slice(0, 3)).toEqual([
      "state-flow: migrate global, cwd, session state.json to checkpoints",
      `state-flow: start session ${sessionKeyFromHeader(h.session.sessionManager.getHeader()!)}`,
      "state-flow: migrate contract.compiled_skills into Skill artifacts",
    ]);
  });

  it("a patch cannot recreate contract.compiled_skills after the migration", async () => {
    const { h } = await legacyProject();
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { cwd: { contract: { compiled_skills: { "/x/SKILL.md": { a: 1 } } } }, final: true }),
      call("patch_state", { final: true }),
      say("ok"),
    );
    await h.prompt("Try the old store");
    const [refused] = h.toolResults();
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toContain("contract.compiled_skills is retired and cannot be recreated");
  });

  // Spec 001 "Existing stores and migration": "Pi initialization now invokes this migration when
  // establishing the temporal runtime"; "Manual-mode startup is read-only" (001 "Usage and activation").
  it("a resumed session migrates the predecessor's state.json on /state-flow-start, once, visibly", async () => {
    const h = await harness({ sessionKind: "file" });
    h.script(say("before State Flow"));
    await h.prompt("a conversation an older version saw");
    const file = h.session.sessionManager.getSessionFile()!;
    const sessionDir = join(h.storeRoot, cwdKey(h.cwd), sessionKeyFromFile(file));
    write(join(h.storeRoot, "state.json"), { artifacts: {}, contract: { tone: "terse" }, working: {}, response: "" });
    write(join(sessionDir, "state.json"), { artifacts: {}, contract: {}, working: { step: 7 }, response: "done" });
    const resumed = await harness({ shareWith: h, openFile: file });
    expect(resumed.accessor.episode(), "a resumed pre-runtime branch stays off").toBe("off");
    expect(existsSync(join(sessionDir, "state.json")), "resuming reads nothing into a new format").toBe(true);
    await resumed.command("/state-flow-start");
    const migrated = resumed.notices.filter((n) => n.message.includes("migrated the legacy state.json"));
    expect(migrated.map((n) => n.message)).toEqual([expect.stringContaining("of the global, session scope(s)")]);
    expect(resumed.accessor.read(0, "session").state).toMatchObject({ working: { step: 7 }, response: "done" });
    resumed.script(call("patch_state", { session: { working: { step: 8 } }, final: true }), say("Step 8."));
    await resumed.prompt("Next step");
    expect(contextText(resumed.contexts[0]!)).toContain("terse");
    const again = await harness({ shareWith: h, openFile: file });
    expect(again.accessor.episode()).toBe("active.steady");
    expect(
      again.notices.some((n) => n.message.includes("migrated the legacy state.json")),
      "once",
    ).toBe(false);
    expect(again.accessor.read(0, "session").state.working).toEqual({ step: 8 });
    expect(existsSync(join(sessionDir, "state.json"))).toBe(false);
  });

  it("autoStart on a genuinely new session migrates the predecessor's shared state.json at startup", async () => {
    const seed = await harness();
    write(join(seed.storeRoot, "state.json"), {
      artifacts: {},
      contract: { tone: "terse" },
      working: {},
      response: "",
    });
    const h = await harness({ shareWith: seed, config: { autoStart: true } });
    expect(h.accessor.episode()).toBe("active.steady");
    expect(h.notices.map((n) => n.message).join("\n")).toContain(
      "migrated the legacy state.json of the global scope(s)",
    );
    expect(h.accessor.read(0, "global").state.contract).toEqual({ tone: "terse" });
  });
});
