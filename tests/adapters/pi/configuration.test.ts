// 001's configuration clauses, each in a real Pi session (Git store): a stop changes neither
// state-flow.json nor a later autoStart; the store follows `directory` while the configuration stays in
// the agent dir; a `directory` override starts a new store and migrates nothing; the SDK's
// `repositoryRoot` moves the store but not Knowledge discovery (`knowledgeRoot` moves that); a resumed branch
// keeps its stored policy; patch_state runs sequentially (executionMode, as 001 asks). autoStart never re-enables a
// stopped branch (only genuinely new sessions), and the file is read at load: an edit waits for /reload.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

/** Every file under `dir` (its .git included) with its bytes: a change anywhere shows. */
function treeBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const path of readdirSync(dir, { recursive: true, encoding: "utf8" }).sort())
    if (statSync(join(dir, path)).isFile()) out[path] = readFileSync(join(dir, path)).toString("base64");
  return out;
}

describe("configuration (001 Usage and activation)", () => {
  it("a stop changes neither state-flow.json nor autoStart: the next new session starts again", async () => {
    const first = await harness({ config: { autoStart: true } });
    const file = join(first.agentDir, "state-flow.json");
    // Bytes, inode and modification time: a rewrite with the same bytes still shows.
    const identity = () => {
      const { ino, mtimeNs, ctimeNs } = statSync(file, { bigint: true });
      return { bytes: readFileSync(file, "utf8"), ino, mtimeNs, ctimeNs };
    };
    const before = identity();
    expect(first.accessor.episode()).toBe("active.steady");
    await first.command("/state-flow-stop");
    expect(first.accessor.episode()).toBe("passive");
    expect(identity()).toEqual(before);
    const next = await harness({ shareWith: first });
    expect(next.accessor.episode(), "autoStart still applies to a genuinely new session").toBe("active.steady");
  });

  it(
    "autoStart after a stop: reload, resume and /tree keep the branch stopped; " + "only a new session starts",
    async () => {
      const h = await harness({ sessionKind: "file", config: { autoStart: true } });
      expect(h.accessor.episode()).toBe("active.steady");
      h.script(call("patch_state", { session: { working: { a: 1 } }, final: true }), say("on"));
      await h.prompt("Before the stop");
      const anchor = h.session.sessionManager.getLeafId()!;
      await h.command("/state-flow-stop");
      await h.session.reload();
      expect(h.accessor.episode(), "a reload is no new session").toBe("passive");
      const resumed = await harness({ shareWith: h, openFile: h.session.sessionFile! });
      expect(resumed.accessor.episode(), "a resumed branch keeps its stored enablement").toBe("passive");
      expect(resumed.activeTools).not.toContain("patch_state");
      await resumed.session.navigateTree(anchor);
      expect(resumed.accessor.episode(), "so does /tree").toBe("passive");
      const fresh = await harness({ shareWith: h, sessionKind: "file" });
      expect(fresh.accessor.episode()).toBe("active.steady");
    },
  );

  it("state-flow.json is read when State Flow loads: an edit changes nothing until /reload", async () => {
    const h = await harness({ config: { logging: false } });
    await h.command("/state-flow-start");
    const log = join(h.agentDir, "tmp", "state-flow", "logs.jsonl");
    const refusedRun = (n: number) => {
      h.script(call("patch_state", { session: { response: `forged ${n}` } }), call("patch_state", { final: true }));
      h.script(say(`answer ${n}`));
      return h.prompt(`Run ${n}`);
    };
    writeFileSync(join(h.agentDir, "state-flow.json"), JSON.stringify({ logging: true }));
    await refusedRun(1);
    expect(h.toolResults()[0]!.isError, "a refusal logging: true would log").toBe(true);
    expect(existsSync(log), "the edit is not read yet").toBe(false);
    await h.session.reload();
    expect(h.accessor.episode()).toBe("active.steady");
    await refusedRun(2);
    const logged = readFileSync(log, "utf8").trim().split("\n");
    expect(logged.map((line) => (JSON.parse(line) as { arguments: unknown }).arguments)).toEqual([
      { session: { response: "forged 2" } },
    ]);
  });

  it("the store follows `directory`; the configuration file stays where Pi's agent dir is", async () => {
    const probe = await harness();
    const elsewhere = join(probe.root, "elsewhere", "flow");
    writeFileSync(join(probe.agentDir, "state-flow.json"), JSON.stringify({ directory: elsewhere }));
    const h = await harness({ shareWith: probe });
    await h.command("/state-flow-start");
    expect(existsSync(join(elsewhere, ".git")), "the store is created at `directory`").toBe(true);
    expect(existsSync(h.storeRoot), "nothing at the default place").toBe(false);
    expect(existsSync(join(elsewhere, "state-flow.json")), "the configuration does not move with it").toBe(false);
    expect(JSON.parse(readFileSync(join(h.agentDir, "state-flow.json"), "utf8"))).toEqual({ directory: elsewhere });
  });

  it("a `directory` override starts a new store: nothing is migrated, the old store is left as it is", async () => {
    const old = await harness();
    await old.command("/state-flow-start");
    old.script(call("patch_state", { global: { contract: { lang: "TS" } }, final: true }), say("noted"));
    await old.prompt("Remember: TypeScript");
    const oldStore = treeBytes(old.storeRoot);
    const git = (dir: string, ...args: string[]) =>
      execFileSync("git", args, { cwd: dir, env: old.env, encoding: "utf8" });
    const oldHead = git(old.storeRoot, "rev-parse", "HEAD").trim();
    const moved = join(old.root, "moved-store");
    writeFileSync(join(old.agentDir, "state-flow.json"), JSON.stringify({ directory: moved }));
    const h = await harness({ shareWith: old });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { global: { working: { here: true } }, final: true }), say("noted"));
    await h.prompt("A first note in the new store");
    expect(h.accessor.read(0, "global").state.contract).toEqual({});
    expect(treeBytes(old.storeRoot), "the old store, its .git included, is left byte for byte").toEqual(oldStore);
    // No Git object came over either: the new repository's history starts at its own first commit.
    expect(() => git(moved, "cat-file", "-e", oldHead), "the old head is not in the new store").toThrow();
    expect(git(moved, "rev-list", "--max-parents=0", "HEAD").trim().split("\n")).toHaveLength(1);
  });

  it("SDK repositoryRoot moves the store, not Knowledge discovery; knowledgeRoot moves that", async () => {
    const probe = await harness();
    const knowledge = join(probe.agentDir, "knowledge");
    mkdirSync(knowledge, { recursive: true });
    writeFileSync(join(knowledge, "a.md"), "# A\n");
    const other = join(probe.root, "other-knowledge");
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, "b.md"), "# B\n");
    const repositoryRoot = join(probe.root, "sdk-store");
    const moved = await harness({ shareWith: probe, extensionOptions: { repositoryRoot } });
    await moved.command("/state-flow-start");
    expect(existsSync(join(repositoryRoot, ".git"))).toBe(true);
    expect(existsSync(moved.storeRoot), "nothing at the default place").toBe(false);
    moved.script(call("patch_state", { final: true }), say("ok"));
    await moved.prompt("What is new?");
    const seen = contextText(moved.contexts.at(-2)!);
    expect(seen, "Knowledge is still discovered under the agent dir").toContain(`- ${join(knowledge, "a.md")}: new`);
    const elsewhere = await harness({ shareWith: probe, extensionOptions: { repositoryRoot, knowledgeRoot: other } });
    await elsewhere.command("/state-flow-start");
    elsewhere.script(call("patch_state", { final: true }), say("ok"));
    await elsewhere.prompt("What is new here?");
    const there = contextText(elsewhere.contexts.at(-2)!);
    expect(there).toContain(`- ${join(other, "b.md")}: new`);
    expect(there).not.toContain(join(knowledge, "a.md"));
  });

  it("a resumed branch keeps the publication policy it started with, whatever state-flow.json says now", async () => {
    const first = await harness({ sessionKind: "file", config: { remotePublication: "off" } });
    await first.command("/state-flow-start");
    // The operator's remote: with "off" nothing reaches it; with "transition" each patch would, at once.
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", args, { cwd, env: first.env, encoding: "utf8" });
    const remote = join(first.root, "remote.git");
    git(first.root, "init", "-q", "--bare", remote);
    git(first.storeRoot, "remote", "add", "origin", remote);
    first.script(call("patch_state", { session: { working: { a: 1 } }, final: true }), say("ok"));
    await first.prompt("Something");
    writeFileSync(join(first.agentDir, "state-flow.json"), JSON.stringify({ remotePublication: "transition" }));
    const resumed = await harness({ shareWith: first, openFile: first.session.sessionFile! });
    expect(resumed.accessor.episode()).toBe("active.steady");
    expect(resumed.accessor.status()).toContain("remote publication: off");
    resumed.script(call("patch_state", { session: { working: { a: 2 } }, final: true }), say("ok"));
    await resumed.prompt("Something more");
    expect(resumed.accessor.read(0, "session").state.working).toEqual({ a: 2 });
    expect(git(remote, "for-each-ref"), "nothing was pushed: the branch's policy is still off").toBe("");
  });

  it("patch_state runs sequentially (executionMode), never beside another tool call of its batch", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const definition = h.session.getToolDefinition("patch_state") as { executionMode?: string } | undefined;
    expect(definition?.executionMode).toBe("sequential");
  });
});
