// What State Flow does not do, each in a real Pi session (001 clauses that were true but untested): a passive
// (stopped) answer is never steered and does no Knowledge work; an inference that patches nothing runs no git
// process (only accepted transitions are published); State Flow never creates a remote.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n").filter(Boolean);

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
