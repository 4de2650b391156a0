// Several Pi sessions on one store (one agent dir, one project): each run starts from the other
// sessions' shared changes, and a fork of a stopped session shows none of its parent's private messages.
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say, waitUntil } from "../../support/pi-harness.ts";
import { RUN_ANCHOR_TEXT } from "../../../adapters/pi/context.ts";

const harness = harnessFactory();

for (const git of [true, false]) {
  describe(`two sessions on one ${git ? "Git" : "file-only"} store`, () => {
    it("each run starts from the other session's cwd change, so a cwd patch builds on it at once", async () => {
      const a = await harness(git ? {} : { git: false });
      const b = await harness({ shareWith: a, ...(git ? {} : { git: false }) });
      await a.command("/state-flow-start");
      await b.command("/state-flow-start");
      a.script(call("patch_state", { cwd: { contract: { storage: "todos.json" } }, final: true }), say("A done"));
      await a.prompt("A: store todos in a JSON file");

      // (a change another session makes while a run works is a named refusal: tests/adapters/pi/fresh-runs.test.ts)
      b.script(call("patch_state", { cwd: { contract: { cli: "todo" } }, final: true }), say("B done"));
      await b.prompt("B: the binary is called todo");
      expect(b.extensionErrors()).toEqual([]);
      expect(b.toolResults().map((r) => [r.tool, r.isError])).toEqual([["patch_state", false]]);
      expect(b.accessor.read(0, "cwd").state.contract).toEqual({ storage: "todos.json", cli: "todo" });
      expect(b.accessor.read(0).state.response).toBe("B done");
      // A's next run adopts B's cwd the same way, before its first inference.
      a.script(call("patch_state", { session: { working: { next: "list" } }, final: true }), say("A again"));
      await a.prompt("A: next");
      expect(contextText(a.contexts.at(-2)!)).toContain('"cli": "todo"');
      expect(a.accessor.read(0, "cwd").state.contract).toEqual({ storage: "todos.json", cli: "todo" });
    });
  });
}

describe("a fork of a stopped State Flow session", () => {
  it("starts ordinary, and its model sees none of the parent's private State Flow messages", async () => {
    const { SessionManager } = await import("@earendil-works/pi-coding-agent");
    const parent = await harness({ sessionKind: "file" });
    await parent.command("/state-flow-start");
    // One unresolved answer (a hidden steer), then an accepted one; then a stop (the frozen handoff).
    parent.script(
      say("PARENT DRAFT without final"),
      call("patch_state", { session: { working: { secret: "PARENT STATE" } }, final: true }),
      say("parent answer"),
    );
    await parent.prompt("parent request");
    await parent.command("/state-flow-stop");
    const parentFile = parent.session.sessionManager.getSessionFile()!;
    const forked = SessionManager.forkFrom(parentFile, parent.cwd, parent.sessionDir).getSessionFile()!;

    const fork = await harness({ shareWith: parent, openFile: forked });
    expect(fork.accessor.episode(), "a stop marker of another physical session restores as off").toBe("off");
    fork.script(say("fork answer"));
    await fork.prompt("fork request");
    const seen = contextText(fork.contexts.at(-1)!);
    expect(seen).toContain("fork request");
    expect(seen).toContain("parent request");
    expect(seen).not.toContain("frozen exit handoff");
    expect(seen).not.toContain("[State Flow resolution");
    expect(seen).not.toContain(RUN_ANCHOR_TEXT);
    expect(seen, "the draft the parent's resolution discarded is not an answer the fork inherits").not.toContain(
      "PARENT DRAFT without final",
    );
    expect(seen).toContain("parent answer");
    // State Flow's tools are not offered in the fork: their earlier calls and results are not sent either.
    const messages = fork.contexts.at(-1)!.messages as { role: string; toolName?: string; content: unknown }[];
    expect(messages.filter((m) => m.role === "toolResult")).toEqual([]);
    expect(JSON.stringify(messages)).not.toContain('"name":"patch_state"');
    expect(seen).not.toContain("PARENT STATE");
  });
});

describe("a failed-closed branch", () => {
  it("runs no prompt: the model never sees its raw transcript, and the refusal names the remedy", async () => {
    const { rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { cwdKey, sessionKeyFromFile } = await import("../../../storage/layout.ts");
    const a = await harness({ sessionKind: "file", git: false });
    await a.command("/state-flow-start");
    a.script(call("patch_state", { session: { working: { a: 1 } }, final: true }), say("A ANSWER"));
    await a.prompt("A REQUEST");
    const file = a.session.sessionManager.getSessionFile()!;
    // Real fault: the session's own store files are deleted, so no checkpoint of the branch can be proven.
    rmSync(join(a.storeRoot, cwdKey(a.cwd), sessionKeyFromFile(file)), { recursive: true, force: true });
    const reopened = await harness({ shareWith: a, openFile: file, git: false });
    expect(reopened.accessor.episode(), JSON.stringify(reopened.notices)).toBe("failedClosed.unproven");
    const inferences = reopened.contexts.length;
    await reopened.prompt("PROMPT ON A FAILED-CLOSED BRANCH");
    expect(reopened.contexts.length, "no inference ran").toBe(inferences);
    const refusal = reopened.notices.find((n) => n.message.startsWith("State Flow did not run this prompt"));
    expect(refusal?.level).toBe("error");
    expect(refusal?.message).toContain("Select a valid checkpoint with /tree, or start a new session with /new.");
    const sent = reopened.session.messages.filter((m) => m.role === "user");
    expect(JSON.stringify(sent), "the refused prompt is not in the transcript").not.toContain("FAILED-CLOSED");
  });
});

/**
 * Sessions A then B publish to a bare remote of the store (A's cohort, then B's on top); returns
 * both, a git runner, the remote's head and the heads each publication reached.
 */
async function twoPublishedSessions() {
  const { execFileSync } = await import("node:child_process");
  const { mkdirSync } = await import("node:fs");
  const { join } = await import("node:path");
  const a = await harness({ sessionKind: "file" });
  const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env: a.env, encoding: "utf8" });
  const remote = join(a.root, "remote.git");
  git(a.root, "init", "-q", "--bare", remote);
  mkdirSync(a.storeRoot, { recursive: true });
  git(a.storeRoot, "init", "-q");
  git(a.storeRoot, "remote", "add", "origin", remote);
  const remoteHead = () => git(remote, "for-each-ref", "--format=%(objectname)").trim();
  const until = waitUntil;
  await a.command("/state-flow-start");
  a.script(call("patch_state", { session: { working: { a: 1 } }, final: true }), say("A"));
  await a.prompt("A works");
  const aHead = git(a.storeRoot, "rev-parse", "HEAD").trim();
  await until(() => remoteHead() === aHead);
  const b = await harness({ shareWith: a, sessionKind: "file" });
  await b.command("/state-flow-start");
  b.script(call("patch_state", { cwd: { contract: { b: 2 } }, final: true }), say("B"));
  await b.prompt("B works");
  const bHead = git(a.storeRoot, "rev-parse", "HEAD").trim();
  await until(() => remoteHead() === bHead);
  return { a, b, git, remoteHead, until, aHead, bHead };
}

describe("publication shared by two sessions", () => {
  it("a resumed session whose revision the remote already contains is published, not pending", async () => {
    const { a, remoteHead, until, bHead } = await twoPublishedSessions();
    expect(remoteHead()).toBe(bHead);

    // A is reopened: its branch's newest revision is older than the remote's head, and contained in it.
    const resumed = await harness({ shareWith: a, openFile: a.session.sessionManager.getSessionFile()! });
    expect(resumed.accessor.episode()).toBe("active.steady");
    // Restored as owed (its record not yet settled), the revision reads "(pending …)" until the remote's
    // answer (it has it) arrives; restored as settled, never. Nothing runs after either, so no sleep is
    // needed to see that it stays published.
    await until(() => !/pending/.test(resumed.accessor.status()));
    expect(resumed.accessor.status()).not.toMatch(/pending/);
    expect(resumed.notices.filter((n) => /pending/.test(n.message))).toEqual([]);
    expect(remoteHead()).toBe(bHead);
  });

  it("a restart reconciles with the remote before pushing: a revision it already has is not pushed again", async () => {
    const { existsSync, readFileSync, rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { sessionKeyFromFile } = await import("../../../storage/layout.ts");
    const { a, git, until, aHead } = await twoPublishedSessions();

    // A session an older version wrote has no record; from now on any push reaching the remote is seen.
    const file = a.session.sessionManager.getSessionFile()!;
    const record = join(a.storeRoot, ".git/state-flow/pending", `${sessionKeyFromFile(file)}.json`);
    await until(() => existsSync(record) && readFileSync(record, "utf8").includes("settled"));
    rmSync(record);
    const log = join(a.root, "resumed-git.log");
    const commits = git(a.storeRoot, "rev-list", "--count", "HEAD");
    const resumed = await harness({ shareWith: a, openFile: file, gitLog: log });
    expect(resumed.accessor.episode()).toBe("active.steady");
    await until(() => existsSync(record));
    expect(git(a.storeRoot, "rev-list", "--count", "HEAD"), "restoring commits nothing").toBe(commits);
    expect(JSON.parse(readFileSync(record, "utf8"))).toEqual({ state: "settled", revision: aHead });
    const commands = readFileSync(log, "utf8").split("\n");
    expect(
      commands.filter((c) => c.startsWith("ls-remote")),
      "the remote's history was asked",
    ).toHaveLength(1);
    expect(
      commands.filter((c) => c.startsWith("push")),
      "and it answered: nothing is pushed",
    ).toEqual([]);
    expect(resumed.accessor.status()).not.toMatch(/pending/);
  });
});

describe("two sessions on one file-only store, one reopened", () => {
  it("the reopened one restores its newest checkpoint over the other's cwd change; patch and /tree work", async () => {
    const a = await harness({ git: false, sessionKind: "file" });
    await a.command("/state-flow-start");
    a.script(
      call("patch_state", {
        cwd: { contract: { storage: "todos.json" } },
        session: { working: { owner: "A" } },
        final: true,
      }),
      say("A done"),
    );
    await a.prompt("A: store todos in a JSON file");
    const first = a.session.sessionManager.getLeafId()!;
    const b = await harness({ shareWith: a, git: false });
    await b.command("/state-flow-start");
    b.script(call("patch_state", { cwd: { contract: { cli: "todo" } }, final: true }), say("B done"));
    await b.prompt("B: the binary is called todo");
    expect(b.extensionErrors()).toEqual([]);

    const file = a.session.sessionManager.getSessionFile()!;
    const resumed = await harness({ shareWith: a, git: false, openFile: file });
    expect(resumed.notices.filter((n) => n.level !== "info")).toEqual([]);
    expect(resumed.accessor.episode()).toBe("active.steady");
    expect(resumed.accessor.read(0, "cwd").state.contract).toEqual({ storage: "todos.json", cli: "todo" });
    expect(resumed.accessor.read(0, "session").state.working).toEqual({ owner: "A" });

    resumed.script(
      call("patch_state", { cwd: { contract: { tests: "vitest" } }, session: { working: { next: "list" } } }),
      call("patch_state", { session: { working: { done: true } }, final: true }),
      say("A again"),
    );
    await resumed.prompt("A: next");
    expect(resumed.extensionErrors()).toEqual([]);
    const results = resumed.session.messages.filter((m) => m.role === "toolResult") as { isError: boolean }[];
    expect(results.slice(-2).map((r) => r.isError)).toEqual([false, false]);
    expect(resumed.accessor.read(0, "cwd").state.contract).toEqual({
      storage: "todos.json",
      cli: "todo",
      tests: "vitest",
    });
    expect(resumed.accessor.read(0, "session").state.working).toEqual({ owner: "A", next: "list", done: true });
    const newest = resumed.session.sessionManager.getLeafId()!;

    // B advances cwd again. A's first checkpoint names session files A has since replaced: unavailable, never
    // read as that past. /tree back to A's newest one reads B's cwd live over A's intact session layer.
    const lint = { cwd: { contract: { lint: "eslint" } }, final: true };
    b.script(call("patch_state", lint), call("patch_state", lint), say("B again")); // the first is refused: A moved cwd
    await b.prompt("B: lint with eslint");
    expect(b.accessor.read(0, "cwd").state.contract).toMatchObject({ tests: "vitest", lint: "eslint" });
    await resumed.session.navigateTree(first);
    expect(resumed.accessor.episode()).toBe("failedClosed.unproven");
    await resumed.session.navigateTree(newest);
    expect(resumed.accessor.episode()).toBe("active.steady");
    const contract = { storage: "todos.json", cli: "todo", tests: "vitest", lint: "eslint" };
    expect(resumed.accessor.read(0, "cwd").state.contract).toEqual(contract);
    expect(resumed.accessor.read(0, "session").state.working).toEqual({ owner: "A", next: "list", done: true });
    resumed.script(call("patch_state", { session: { working: { after: "tree" } }, final: true }), say("A after tree"));
    await resumed.prompt("A: after tree");
    expect(resumed.extensionErrors()).toEqual([]);
    expect(resumed.accessor.read(0, "session").state.working).toMatchObject({ done: true, after: "tree" });
    expect(resumed.accessor.read(0, "cwd").state.contract).toEqual(contract);
  });
});
