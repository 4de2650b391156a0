// What State Flow does not do, each in a real Pi session (001 clauses that were true but untested): a passive
// (stopped) answer is never steered and does no Knowledge work; an inference that patches nothing runs no git
// process (only accepted transitions are published); read_state neither publishes nor steps history; State Flow
// never creates a remote.
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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
    mkdirSync(join(h.agentDir, "knowledge"), { recursive: true });
    writeFileSync(join(h.agentDir, "knowledge", "a.md"), "# A\n");
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("on"));
    await h.prompt("First");
    await h.command("/state-flow-stop");
    const before = h.contexts.length;
    h.script(say("a plain answer, no patch_state"));
    await h.prompt("Second, while stopped");
    expect(h.contexts.length - before, "one inference: no steer asks again").toBe(1);
    const seen = contextText(h.contexts.at(-1)!);
    expect(seen).not.toContain("[State Flow resolution");
    expect(seen, "no Knowledge plan in passive mode").not.toContain("Artifact invalidations");
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
    expect(commands.filter((c) => /^(remote add|remote set-url|push|fetch|clone)\b/.test(c))).toEqual([]);
  });
});
