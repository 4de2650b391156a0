// Knowledge discovery through a real Pi session: the runtime context's artifact_invalidations
// lists the Markdown sources under <agentDir>/knowledge that have no artifact yet, nested alike,
// never a symlink, an uppercase .MD or a file outside the root; a compiled source leaves the list.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const section = (text: string) => {
  const start = text.indexOf("## Artifact invalidations");
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
};

describe("Knowledge sources in the runtime context", () => {
  it("new sources are listed as {path, reason} until the model compiles them; others never appear", async () => {
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(join(root, "nested"), { recursive: true });
    writeFileSync(join(root, "a.md"), "# A\n");
    writeFileSync(join(root, "nested", "b.md"), "# B\n");
    writeFileSync(join(root, "UPPER.MD"), "ignored");
    writeFileSync(join(h.root, "outside.md"), "outside");
    symlinkSync(join(h.root, "outside.md"), join(root, "link.md"));
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { global: { artifacts: { [join(root, "a.md")]: { description: "A notes" } } }, final: true }),
      say("Compiled A."),
    );
    await h.prompt("Compile what is new");
    const first = section(contextText(h.contexts[0]!));
    expect(first).toContain(`- ${join(root, "a.md")}: new`);
    expect(first).toContain(`- ${join(root, "nested", "b.md")}: new`);
    expect(first).not.toMatch(/UPPER|link\.md|outside/);

    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Next");
    const next = section(contextText(h.contexts.at(-2)!));
    expect(next, "a compiled source leaves the invalidations").not.toContain(`${join(root, "a.md")}: new`);
    // Compiled without a read, its age is unknown: the run's bounded maintenance selects it.
    expect(next).toContain(`- ${join(root, "a.md")}: maintenance`);
    expect(next).toContain(`- ${join(root, "nested", "b.md")}: new`);
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain(`stale artifacts: 1 (1 new): ${join(root, "nested", "b.md")} (new)`);
  });

  it("no reserved names, frontmatter or templates; no save_knowledge nor a second tool to read sources", async () => {
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(join(root, "templates"), { recursive: true });
    const names = ["index.md", "save_knowledge.md", join("templates", "_template.md"), "plain.md"];
    writeFileSync(join(root, "index.md"), "---\ntitle: Index\nkind: skill\ntags: [api]\n---\n# Index\n");
    writeFileSync(join(root, "save_knowledge.md"), "# save_knowledge\n");
    writeFileSync(join(root, "templates", "_template.md"), "---\ntemplate: true\n---\n{{body}}\n");
    writeFileSync(join(root, "plain.md"), "no heading, no frontmatter\n");
    await h.command("/state-flow-start");
    // A name or a frontmatter that meant something would leave a source out, or refuse the plain description.
    const artifacts = Object.fromEntries(names.map((n) => [join(root, n), { description: n }]));
    h.script(call("patch_state", { global: { artifacts }, final: true }), say("Compiled all."));
    await h.prompt("Compile what is new");
    const listed = section(contextText(h.contexts[0]!));
    for (const name of names) expect(listed).toContain(`- ${join(root, name)}: new`);
    expect(h.toolResults().map((r) => r.isError)).toEqual([false]);
    expect(h.accessor.read(0, "global").state.artifacts).toEqual(artifacts);
    // State Flow (the one extension loaded) adds patch_state and read_state; reading a source is Pi's own read.
    const tools = h.session.getAllTools() as { name: string; sourceInfo?: { source?: string } }[];
    const added = tools.filter((t) => t.sourceInfo?.source !== "builtin").map((t) => t.name);
    expect(tools.map((t) => t.name)).toContain("read");
    expect(added.sort()).toEqual(["patch_state", "read_state"]);
  });

  it("without a Knowledge root nothing is stale, and the context leaves the empty section out", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Anything?");
    const messages = contextText({ messages: h.contexts[0]!.messages } as never);
    expect(messages).toContain("[State Flow runtime context");
    expect(messages).not.toContain("Artifact invalidations");
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message, "status still says the check found none").toContain(
      "stale artifacts: none (no discovered Knowledge source is new or known to be stale)",
    );
  });
});

describe("reading a listed source obliges its compilation in the next patch_state", () => {
  it("refused without it, with the fix; accepted with it, recording the hash; a later change invalidates", async () => {
    const { readFileSync } = await import("node:fs");
    const { createHash } = await import("node:crypto");
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const source = join(root, "a.md");
    writeFileSync(source, "# A\nfacts\n");
    await h.command("/state-flow-start");
    const artifact = { global: { artifacts: { [source]: { description: "A: the facts" } } }, final: true };
    h.script(
      call("read", { path: source }),
      call("patch_state", { final: true }),
      call("patch_state", artifact),
      say("Compiled."),
    );
    await h.prompt("Read the new source");
    const results = h.toolResults();
    expect(results.map((r) => [r.tool, r.isError])).toEqual([
      ["read", false],
      ["patch_state", true],
      ["patch_state", false],
    ]);
    const refusal = results[1]!.text;
    expect(refusal).toContain(`You read ${source} (new): a source listed under Artifact invalidations`);
    expect(refusal).toContain(`{"global":{"artifacts":{${JSON.stringify(source)}:{"description":"<what it holds`);
    const meta = JSON.parse(readFileSync(join(h.storeRoot, "meta.json"), "utf8")) as {
      artifacts: Record<string, { sourceHash: string; compilerRevision: string; compiledAt: string }>;
    };
    const hash = `sha256:${createHash("sha256").update("# A\nfacts\n").digest("hex")}`;
    expect(meta.artifacts[source]).toEqual({
      sourceHash: hash,
      compilerRevision: "artifact-v1",
      compiledAt: expect.any(String),
    });
    expect(JSON.stringify(h.accessor.read(0).state), "provenance never reaches semantic state").not.toContain(hash);

    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Anything stale?");
    expect(section(contextText(h.contexts.at(-2)!))).not.toContain(source);
    writeFileSync(source, "# A\nnew facts\n");
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("And now?");
    expect(section(contextText(h.contexts.at(-2)!))).toContain(`- ${source}: changed`);
  });

  it("a patch that writes freshness evidence itself is refused as forged-provenance", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const forged = {
      global: { artifacts: { "/k/a.md": { description: "A", sourceHash: `sha256:${"0".repeat(64)}` } } },
    };
    h.script(call("patch_state", forged), call("patch_state", { final: true }), say("ok"));
    await h.prompt("Forge it");
    const result = h.toolResults()[0]!;
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(
      /global\.artifacts.*sourceHash.*is runtime-owned provenance; the runtime records the source hash/,
    );
    expect(h.accessor.read(0, "global").state.artifacts).toEqual({});
  });
});

describe("malformed freshness evidence", () => {
  it("a malformed sourceHash in the cwd meta.json does not keep a new session from starting", async () => {
    const { readFileSync } = await import("node:fs");
    const { cwdKey } = await import("../../../storage/layout.ts");
    const a = await harness();
    await a.command("/state-flow-start");
    const metaPath = join(a.storeRoot, cwdKey(a.cwd), "meta.json");
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as Record<string, unknown>;
    meta.artifacts = { "/k/a.md": { sourceHash: "not-a-hash", compilerRevision: "artifact-v1" } };
    writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
    const { execFileSync } = await import("node:child_process");
    execFileSync("git", ["commit", "-qam", "user: a hand-edited meta.json"], { cwd: a.storeRoot, env: a.env });
    const b = await harness({ shareWith: a });
    await b.command("/state-flow-start");
    expect(b.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    expect(b.notices.filter((n) => n.level === "error")).toEqual([]);
  });
});

describe("malformed evidence fails closed for what needs it", () => {
  it("a bad sourceHash makes that one source malformed; the others stay fresh", async () => {
    const { readFileSync } = await import("node:fs");
    const { execFileSync } = await import("node:child_process");
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const [a, b] = [join(root, "a.md"), join(root, "b.md")];
    writeFileSync(a, "A");
    writeFileSync(b, "B");
    await h.command("/state-flow-start");
    const both = { global: { artifacts: { [a]: { description: "A" }, [b]: { description: "B" } } }, final: true };
    h.script(call("read", { path: a }), call("read", { path: b }), call("patch_state", both), say("Compiled."));
    await h.prompt("Compile both");
    const metaPath = join(h.storeRoot, "meta.json");
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as { artifacts: Record<string, { sourceHash: string }> };
    meta.artifacts[a]!.sourceHash = "sha256:not-hex";
    writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
    execFileSync("git", ["commit", "-qam", "user: a hand-edited meta.json"], { cwd: h.storeRoot, env: h.env });
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Stale?");
    const listed = section(contextText(h.contexts.at(-2)!));
    expect(listed).toContain(`- ${a}: malformed`);
    expect(listed, "b's evidence is intact").not.toContain(b);
  });
});

describe("a removed Knowledge source", () => {
  it("loses its global artifact and provenance in one runtime transition, without a read or a model call", async () => {
    const { readFileSync, rmSync } = await import("node:fs");
    const { execFileSync } = await import("node:child_process");
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const source = join(root, "gone.md");
    writeFileSync(source, "# soon gone\n");
    await h.command("/state-flow-start");
    const artifact = { global: { artifacts: { [source]: { description: "soon gone" } } }, final: true };
    h.script(call("read", { path: source }), call("patch_state", artifact), say("Compiled."));
    await h.prompt("Compile it");
    const meta = () => JSON.parse(readFileSync(join(h.storeRoot, "meta.json"), "utf8")) as { artifacts: object };
    expect(Object.keys(meta().artifacts)).toEqual([source]);

    rmSync(source);
    const inferences = h.contexts.length;
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Carry on");
    expect(h.contexts.length - inferences, "no extra model call").toBe(2);
    expect(h.accessor.read(0, "global").state.artifacts).toEqual({});
    expect(meta().artifacts, "its provenance is pruned").toEqual({});
    const log = execFileSync("git", ["log", "--format=%s"], { cwd: h.storeRoot, env: h.env, encoding: "utf8" });
    expect(log).toContain("state-flow: knowledge removed 1 source(s)");
    expect(section(contextText(h.contexts[inferences]!))).not.toContain(source);
  });
});

describe("Knowledge refresh and maintenance in runs", () => {
  async function compiledSource(name = "a.md") {
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const source = join(root, name);
    writeFileSync(source, "# A\nfacts\n");
    await h.command("/state-flow-start");
    const artifact = { global: { artifacts: { [source]: { description: "A: the facts" } } }, final: true };
    h.script(call("read", { path: source }), call("patch_state", artifact), say("Compiled."));
    await h.prompt("Compile the new source");
    return { h, source };
  }
  const compiledAt = (h: { storeRoot: string }, source: string) =>
    (
      JSON.parse(readFileSync(join(h.storeRoot, "meta.json"), "utf8")) as {
        artifacts: Record<string, { compiledAt: string }>;
      }
    ).artifacts[source]!.compiledAt;

  it("/state-flow-refresh lists a fresh source as refresh until a run recompiles it; a bad name: refused", async () => {
    const { h, source } = await compiledSource();
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Anything to read?");
    expect(section(contextText(h.contexts.at(-2)!)), "fresh: nothing listed").not.toContain(source);

    await h.command("/state-flow-refresh b.md");
    const refused = h.lastNotice()!;
    expect(refused.level).toBe("warning");
    expect(refused.message).toMatch(/^unknown-knowledge-source|b\.md is not a Knowledge source: discovery under/);
    expect(refused.message).toContain("finds a.md. Give one of them (relative to that root, or absolute)");
    await h.command("/state-flow-refresh a.md");
    expect(h.lastNotice()!.level, "doing what the refusal says works").toBe("info");
    expect(h.lastNotice()!.message).toContain("Refresh asked for 1 Knowledge source(s): a.md.");
    await h.command("/state-flow-refresh");
    expect(h.lastNotice()!.message).toContain("Refresh asked for: a.md.");

    const before = compiledAt(h, source);
    const refreshed = { global: { artifacts: { [source]: { description: "A: the facts, rechecked" } } }, final: true };
    h.script(
      call("read", { path: source }),
      call("patch_state", { final: true }),
      call("patch_state", refreshed),
      say("Refreshed."),
    );
    await h.prompt("Do what is listed");
    expect(section(contextText(h.contexts.at(-3)!))).toContain(`- ${source}: refresh`);
    const [, unmet, done] = h.toolResults().slice(-3);
    expect(unmet!.text).toContain(`You read ${source} (refresh)`);
    expect(done!.isError, done!.text).toBe(false);
    expect(compiledAt(h, source) > before, "the refresh recorded a new compilation").toBe(true);
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Anything left?");
    expect(section(contextText(h.contexts.at(-2)!)), "the request is settled").not.toContain(source);
  });

  it("asked while State Flow is off, the refusal says to start it, and then it works", async () => {
    const h = await harness();
    mkdirSync(join(h.agentDir, "knowledge"), { recursive: true });
    writeFileSync(join(h.agentDir, "knowledge", "a.md"), "# A\n");
    await h.command("/state-flow-refresh all");
    expect(h.lastNotice()!.message).toContain("State Flow is not on for this branch");
    expect(h.lastNotice()!.message).toContain("/state-flow-start, then ask again");
    await h.command("/state-flow-start");
    await h.command("/state-flow-refresh all");
    expect(h.lastNotice()!.message).toContain("Refresh asked for 1 Knowledge source(s): a.md.");
  });

  it("a run lists its bounded maintenance selection; reading it obliges the recompilation", async () => {
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const [a, b] = [join(root, "a.md"), join(root, "b.md")];
    writeFileSync(a, "# A\n");
    writeFileSync(b, "# B\n");
    await h.command("/state-flow-start");
    // Written without a read: no provenance, so their age is unknown and maintenance may select them.
    const both = { [a]: { description: "A" }, [b]: { description: "B" } };
    h.script(call("patch_state", { global: { artifacts: both }, final: true }), say("Noted."));
    await h.prompt("Note both sources");
    h.script(
      call("read", { path: a }),
      call("patch_state", { final: true }),
      // The artifact was right: the same compilation records the read without a semantic change.
      call("patch_state", { global: { artifacts: { [a]: { description: "A" } } }, final: true }),
      say("Maintained."),
    );
    const global = h.accessor.read(0, "global").state;
    expect(() => compiledAt(h, a), "no provenance yet").toThrow();
    await h.prompt("Maintain what is listed");
    const listed = section(contextText(h.contexts.at(-3)!));
    expect(listed, "one source per run (the default budget)").toContain(`- ${a}: maintenance`);
    expect(listed).not.toContain(b);
    expect(h.toolResults().at(-2)!.text).toContain(`You read ${a} (maintenance)`);
    const same = h.toolResults().at(-1)!;
    expect(same.isError, same.text).toBe(false);
    expect(same.text).toContain(`No semantic change: your compilation of ${a} equals its artifact`);
    expect(compiledAt(h, a), "its provenance is recorded").toEqual(expect.any(String));
    expect(h.accessor.read(0, "global").state, "no semantic change").toEqual(global);
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain("maintenance: none selected for this run");
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Next run");
    expect(section(contextText(h.contexts.at(-2)!)), "the next run selects the next one").toContain(
      `- ${b}: maintenance`,
    );
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain(`maintenance: ${b} — this run's bounded selection`);
    expect(h.lastNotice()!.message, "maintenance is no problem").toContain("Problems: none found");
  });

  it("the model refreshes an unlisted source with a read and an artifact patch; a read alone owes none", async () => {
    const { h, source } = await compiledSource();
    const before = compiledAt(h, source);
    h.script(call("read", { path: source }), call("patch_state", { final: true }), say("Answered from the source."));
    await h.prompt("What exactly does the source say?");
    expect(h.toolResults().at(-1)!.isError, "a read for a gap obliges no compilation").toBe(false);
    expect(compiledAt(h, source)).toBe(before);
    const better = { global: { artifacts: { [source]: { description: "A: the facts, better" } } }, final: true };
    h.script(call("read", { path: source }), call("patch_state", better), say("Recompiled."));
    await h.prompt("Your artifact for it is thin; refresh it");
    expect(h.toolResults().at(-1)!.isError).toBe(false);
    expect(compiledAt(h, source) > before, "its compilation is recorded").toBe(true);
  });
});

/** Every entry under `dir` (its .git included), by relative path: a file's bytes' hash, a link's target. */
function treeSnapshot(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix === "" ? name : join(prefix, name);
    const stat = lstatSync(join(dir, rel));
    if (stat.isDirectory()) Object.assign(out, { [`${rel}/`]: "dir" }, treeSnapshot(dir, rel));
    else if (stat.isSymbolicLink()) out[rel] = `-> ${readlinkSync(join(dir, rel))}`;
    else
      out[rel] = createHash("sha256")
        .update(readFileSync(join(dir, rel)))
        .digest("hex");
  }
  return out;
}

describe("a Knowledge root that is its own Git repository, beside the state store", () => {
  it(
    "state publication never touches it: its files, index, HEAD, refs, locks " + "and remote stay byte for byte",
    async () => {
      const h = await harness();
      const root = join(h.agentDir, "knowledge");
      const remote = join(h.root, "knowledge-remote.git");
      const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env: h.env, encoding: "utf8" });
      mkdirSync(root, { recursive: true });
      const source = join(root, "a.md");
      writeFileSync(source, "# A\nfacts\n");
      git(root, "init", "-q");
      git(root, "add", "a.md");
      git(root, "commit", "-qm", "user: my notes");
      git(h.root, "init", "-q", "--bare", remote);
      git(root, "remote", "add", "origin", remote);
      // The user's work in progress there: a staged edit, an unstaged one on top of it, an untracked file.
      writeFileSync(source, "# A\nmore facts\n");
      git(root, "add", "a.md");
      writeFileSync(source, "# A\nmore facts, unstaged\n");
      writeFileSync(join(root, "draft.md"), "# Draft\n");
      const before = { knowledge: treeSnapshot(root), remote: treeSnapshot(remote) };

      await h.command("/state-flow-start");
      const artifact = { global: { artifacts: { [source]: { description: "A: the facts" } } }, final: true };
      h.script(call("read", { path: source }), call("patch_state", artifact), say("Compiled."));
      await h.prompt("Compile the new source");
      expect(h.toolResults().map((r) => [r.tool, r.isError])).toEqual([
        ["read", false],
        ["patch_state", false],
      ]);
      await h.command("/state-flow-stop");
      await h.command("/state-flow-start");

      // Start, the compilation (with its provenance), the answer, stop and restart were all published…
      const store = git(h.storeRoot, "log", "--format=%s").trim().split("\n");
      expect(store.length).toBeGreaterThanOrEqual(5);
      expect(JSON.parse(readFileSync(join(h.storeRoot, "meta.json"), "utf8")).artifacts[source]).toBeDefined();
      // …to the state store only: the Knowledge repository and its remote are exactly as the user left them.
      expect(treeSnapshot(root)).toEqual(before.knowledge);
      expect(treeSnapshot(remote)).toEqual(before.remote);
      expect(git(root, "log", "--format=%s")).toBe("user: my notes\n");
    },
  );
});
