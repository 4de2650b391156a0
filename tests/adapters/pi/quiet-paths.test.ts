// What State Flow does not do, each in a real Pi session (001 clauses that were true but untested): a passive
// (stopped) answer is never steered and does no Knowledge work; an inference that patches nothing runs no git
// process (only accepted transitions are published); read_state neither publishes nor steps history; a
// publication leaves the files of the scopes it did not change as they were; State Flow never creates a remote.
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { basename, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, calls, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n").filter(Boolean);

/** Every file under `dir` (its .git included) with its bytes, in path order: a change anywhere shows. */
function storeBytes(dir: string): string {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .filter((path) => statSync(join(dir, path)).isFile())
    .map((path) => `${path}\n${readFileSync(join(dir, path), "latin1")}`)
    .join("\n");
}

describe("what State Flow leaves alone", () => {
  it("a passive answer is never steered and does no Knowledge work", async () => {
    const h = await harness();
    const root = join(h.agentDir, "knowledge");
    mkdirSync(root, { recursive: true });
    const compiled = join(root, "a.md");
    writeFileSync(compiled, "# A\n");
    await h.command("/state-flow-start");
    const artifact = { global: { artifacts: { [compiled]: { description: "A" } } }, final: true };
    h.script(call("read", { path: compiled }), call("patch_state", artifact), say("on"));
    await h.prompt("First");
    await h.command("/state-flow-stop");
    // Work an enabled run would do (knowledge.test.ts): a gone source's artifact removed by a runtime
    // transition, a new source listed. Stopped, neither happens: the store keeps every byte.
    rmSync(compiled);
    writeFileSync(join(root, "b.md"), "# B\n");
    const store = storeBytes(h.storeRoot);
    const before = h.contexts.length;
    h.script(say("a plain answer, no patch_state"));
    await h.prompt("Second, while stopped");
    expect(h.contexts.length - before, "one inference: no steer asks again").toBe(1);
    const seen = contextText(h.contexts.at(-1)!);
    expect(seen).not.toContain("[State Flow resolution");
    expect(seen, "no Knowledge plan in passive mode").not.toContain("Artifact invalidations");
    expect(seen).not.toContain("b.md");
    expect(storeBytes(h.storeRoot) === store, "no upkeep transition, no provenance written").toBe(true);
    expect(h.accessor.read(0, "global").state.artifacts).toHaveProperty([compiled]);
    const steers = h.session.messages.filter(
      (m) => m.role === "custom" && (m as { customType: string }).customType === "state-flow-resolution",
    );
    expect(steers).toEqual([]);
  });

  it("inferences that patch nothing run no git process: a run's git work is its accepted transitions'", async () => {
    const probe = await harness();
    const log = join(probe.root, "git.log");
    writeFileSync(log, "");
    const h = await harness({ shareWith: probe, gitLog: log });
    writeFileSync(join(h.cwd, "notes.md"), "notes\n");
    await h.command("/state-flow-start");
    // One inference patches, one answers.
    h.script(call("patch_state", { session: { working: { a: 1 } }, final: true }), say("one"));
    let from = lines(log).length;
    await h.prompt("Short run");
    const short = lines(log).length - from;
    expect(short, "each accepted transition's commit stages with git").toBeGreaterThan(0);
    // Three more inferences, each reading a file: the same one patch, the same git work.
    h.script(
      call("read", { path: join(h.cwd, "notes.md") }),
      call("read", { path: join(h.cwd, "notes.md") }),
      call("read", { path: join(h.cwd, "notes.md") }),
      call("patch_state", { session: { working: { a: 2 } }, final: true }),
      say("two"),
    );
    from = lines(log).length;
    await h.prompt("Long run");
    expect(h.contexts.length).toBeGreaterThanOrEqual(7);
    expect(lines(log).length - from, `git commands of the short run: ${short}`).toBe(short);
  });

  it("read_state answers {offset, scope, boundary, state} from cache: no git process, no store write", async () => {
    const probe = await harness();
    const log = join(probe.root, "git.log");
    writeFileSync(log, "");
    const h = await harness({ shareWith: probe, gitLog: log });
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { cwd: { contract: { v: 1 } } }),
      call("patch_state", { cwd: { contract: { v: 2 } }, session: { working: { w: 1 } }, final: true }),
      say("two steps"),
    );
    await h.prompt("Make history");
    // Between the two marks only the read_state calls run (and the inference that asks for them).
    let before = { git: 0, store: "" };
    let after = { git: 0, store: "" };
    const mark = () => ({ git: lines(log).length, store: storeBytes(h.storeRoot) });
    h.script(
      () => {
        before = mark();
        return calls(["read_state", { offset: 2, scope: "cwd" }], ["read_state", {}])();
      },
      () => {
        after = mark();
        return call("patch_state", { final: true })();
      },
      say("read"),
    );
    await h.prompt("Read the past");
    expect(before.git, "the log sees State Flow's git work").toBeGreaterThan(0);
    expect(after.git - before.git, "no git process").toBe(0);
    expect(after.store === before.store, "no byte of the store changed").toBe(true);
    const [past, now] = h
      .toolResults()
      .filter((r) => r.tool === "read_state")
      .map((r) => JSON.parse(r.text) as Record<string, unknown>);
    const boundary = { lineage: expect.any(String), id: expect.any(String), step: expect.any(Number) };
    expect(Object.keys(past!)).toEqual(["offset", "scope", "boundary", "state"]);
    // Two transitions ago: the first patch (the second patch and the run's response came after it).
    expect(past).toEqual({
      offset: 2,
      scope: "cwd",
      boundary,
      state: { artifacts: {}, contract: { v: 1 }, working: {}, response: "" },
    });
    expect(now).toMatchObject({ offset: 0, scope: "effective", state: { contract: { v: 2 }, working: { w: 1 } } });
    expect((now!.boundary as { step: number }).step - (past!.boundary as { step: number }).step).toBe(2);
  });

  it.each([
    ["Git", true],
    ["files only", false],
  ] as const)("a publication leaves the files of the scopes it did not change untouched (%s)", async (_, git) => {
    const h = await harness({ git });
    await h.command("/state-flow-start");
    const all = { global: { contract: { g: 1 } }, cwd: { contract: { c: 1 } }, session: { working: { s: 1 } } };
    h.script(call("patch_state", { ...all, final: true }), say("every scope"));
    await h.prompt("Set all three");
    // The session scope is the folder holding config.json; every other file belongs to global or cwd.
    const files = readdirSync(h.storeRoot, { recursive: true, encoding: "utf8" })
      .filter((path) => !path.startsWith(".git") && statSync(join(h.storeRoot, path)).isFile())
      .sort();
    const sessionDir = dirname(files.find((path) => basename(path) === "config.json")!);
    const shared = files.filter((path) => !path.startsWith(`${sessionDir}/`) && /\.jsonl?$/.test(path));
    expect(shared.length, "global's and cwd's checkpoint, tail and meta").toBe(6);
    /** Bytes, inode and change time: a rewrite with the same bytes still shows. */
    const identity = (path: string) => {
      const stat = statSync(join(h.storeRoot, path), { bigint: true });
      return { path, bytes: readFileSync(join(h.storeRoot, path), "latin1"), ino: stat.ino, ctime: stat.ctimeNs };
    };
    const before = shared.map(identity);
    const head = () => execFileSync("git", ["rev-parse", "HEAD"], { cwd: h.storeRoot, env: h.env, encoding: "utf8" });
    const from = git ? head().trim() : "";

    h.script(call("patch_state", { session: { working: { s: 2 } }, final: true }), say("session only"));
    await h.prompt("Change the session only");
    expect(h.accessor.read(0, "session").state.working).toEqual({ s: 2 });
    expect(shared.map(identity)).toEqual(before);
    if (git) {
      const changed = execFileSync("git", ["diff", "--name-only", from, "HEAD"], {
        cwd: h.storeRoot,
        env: h.env,
        encoding: "utf8",
      });
      const paths = changed.trim().split("\n");
      expect(paths.length).toBeGreaterThan(0);
      expect(
        paths.filter((path) => !path.startsWith(`${sessionDir}/`)),
        "commits touch the session only",
      ).toEqual([]);
    }
  });

  it("never creates a remote: with none configured, no git command adds or pushes to one", async () => {
    const probe = await harness();
    const log = join(probe.root, "git.log");
    writeFileSync(log, "");
    const h = await harness({ shareWith: probe, gitLog: log });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { global: { contract: { x: 1 } }, final: true }), say("done"));
    await h.prompt("Change something shared");
    await h.command("/state-flow-stop");
    const commands = lines(log);
    expect(commands.length).toBeGreaterThan(0);
    // The subcommand is the first word after git's own options (`-c gc.auto=0 fetch …` is a fetch).
    const subcommand = (line: string) => line.replace(/^(?:(?:-c|-C) \S+ |--?\S+ )*/, "").split(" ");
    const remoteWork = commands.filter((line) => {
      const [name, ...args] = subcommand(line);
      const writesRemoteConfig = name === "config" && args.some((a) => /^(remote|branch)\.|^url\./.test(a));
      return ["remote", "push", "fetch", "pull", "clone", "ls-remote"].includes(name!) || writesRemoteConfig;
    });
    expect(remoteWork).toEqual([]);
    expect(subcommand("-c gc.auto=0 -c maintenance.auto=false fetch --quiet origin")[0], "the parse").toBe("fetch");
    // Whatever the commands were, the store's repository ends with no remote configured.
    const config = readFileSync(join(h.storeRoot, ".git", "config"), "utf8");
    expect(config).not.toMatch(/^\[(remote|url) /m);
  });
});
