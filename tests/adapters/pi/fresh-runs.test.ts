// Every run starts from the newest shared state (issue 28): a session adopts the global and cwd
// state other sessions published since its last run before the run's first context, and that
// context says what moved (scope, paths, which transition). Real Pi sessions on one store (two and
// three of them), Git and file-only; a conflict between another session's change and this run's
// own patch of the same scope is refused by name, and re-reading then patching again works.
import type { AssistantMessage, Context } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();
const MOVED = "## Changed by other sessions since this session's last run";

/** The first context of the newest run: the one its runtime context was built for. */
function firstContextOf(h: PiHarness, before: number): string {
  return contextText(h.contexts[before]!);
}

/** The runtime context section that says what moved, as lines (empty when there is none). */
function movedLines(text: string): string[] {
  const at = text.indexOf(MOVED);
  if (at < 0) return [];
  return text
    .slice(at)
    .split("\n")
    .slice(1)
    .filter((line) => line.startsWith("- "));
}

async function started(count: number, git: boolean): Promise<[PiHarness, PiHarness, PiHarness]> {
  const first = await harness(git ? {} : { git: false });
  const all = [first];
  for (let i = 1; i < count; i++) all.push(await harness({ shareWith: first, ...(git ? {} : { git: false }) }));
  for (const h of all) await h.command("/state-flow-start");
  return all as [PiHarness, PiHarness, PiHarness];
}

for (const git of [true, false]) {
  const mode = git ? "Git" : "file-only";
  describe(`fresh runs, two sessions on one ${mode} store`, () => {
    it("a session's next run sees another session's cwd change, and is told what moved, once", async () => {
      const [a, b] = await started(2, git);
      a.script(call("patch_state", { cwd: { contract: { language: "go" } }, final: true }), say("A noted"));
      await a.prompt("we write Go");
      b.script(call("patch_state", { cwd: { contract: { db: "sqlite" } }, final: true }), say("B noted"));
      await b.prompt("we use sqlite");
      expect(b.accessor.read(0, "cwd").state.contract).toEqual({ language: "go", db: "sqlite" });

      const before = a.contexts.length;
      a.script(call("patch_state", { final: true }), say("sqlite"));
      await a.prompt("which database do we use?");
      const seen = firstContextOf(a, before);
      expect(seen).toContain('"db": "sqlite"');
      const lines = movedLines(seen);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^- cwd: added contract\.db \(1 transition\(s\), newest t-[0-9a-f]{8} at its step \d+\)$/,
      );
      expect(a.accessor.read(0, "cwd").state.contract).toEqual({ language: "go", db: "sqlite" });
      expect(a.accessor.read(0).state.response).toBe("sqlite");

      // Nothing moved since: the next run says nothing of other sessions.
      const again = a.contexts.length;
      a.script(call("patch_state", { final: true }), say("still sqlite"));
      await a.prompt("and now?");
      expect(movedLines(firstContextOf(a, again))).toEqual([]);
      expect(a.extensionErrors()).toEqual([]);
      expect(b.extensionErrors()).toEqual([]);
    });

    it("another session's change during this run: a patch of that scope is refused by name, then works", async () => {
      const [a, b] = await started(2, git);
      // B changes cwd while A's run is already under way (A's first inference), after A's run adopted.
      a.faux.appendResponses([
        async (context: Context) => {
          a.contexts.push(context);
          b.script(call("patch_state", { cwd: { contract: { db: "postgres" } }, final: true }), say("B done"));
          await b.prompt("B: we use postgres");
          return call("patch_state", { cwd: { contract: { cli: "todo" } } })() as AssistantMessage;
        },
      ]);
      a.script(
        call("read_state", { scope: "cwd" }),
        call("patch_state", { cwd: { contract: { cli: "todo" } }, session: { working: { next: "ship" } } }),
        call("patch_state", { final: true }),
        say("A done"),
      );
      await a.prompt("A: the binary is called todo");
      const results = a.toolResults();
      expect(results.map((r) => [r.tool, r.isError])).toEqual([
        ["patch_state", true],
        ["read_state", false],
        ["patch_state", false],
        ["patch_state", false],
      ]);
      expect(results[0]!.text).toMatch(/the cwd scope advanced in another session .* Re-read the current cwd state/);
      expect(JSON.parse(results[1]!.text).state.contract).toEqual({ db: "postgres" });
      expect(a.accessor.read(0, "cwd").state.contract).toEqual({ db: "postgres", cli: "todo" });
      expect(a.accessor.read(0).state).toMatchObject({ response: "A done", working: { next: "ship" } });
      expect(a.extensionErrors()).toEqual([]);
    });
  });
}

for (const git of [true, false]) {
  describe(`fresh runs, three sessions on one ${git ? "Git" : "file-only"} store`, () => {
    it("a session adopts what two others changed in global and cwd, keeping its own session layer", async () => {
      const [a, b, c] = await started(3, git);
      a.script(call("patch_state", { session: { working: { mine: "A" } }, final: true }), say("A noted"));
      await a.prompt("remember mine");
      b.script(call("patch_state", { cwd: { working: { build: "make" } }, final: true }), say("B noted"));
      await b.prompt("we build with make");
      c.script(
        call("patch_state", { global: { contract: { editor: "vim" } }, final: true }),
        call("patch_state", { global: { contract: { shell: "zsh" } }, final: true }),
        say("C noted"),
      );
      await c.prompt("my editor and shell");

      const before = a.contexts.length;
      a.script(call("patch_state", { final: true }), say("ok"));
      await a.prompt("what do we know?");
      const lines = movedLines(firstContextOf(a, before));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^- global: added contract\.editor, contract\.shell \(2 transition\(s\), newest t-/);
      expect(lines[1]).toMatch(/^- cwd: added working\.build \(1 transition\(s\), newest t-/);
      expect(a.accessor.read(0).state).toMatchObject({
        contract: { editor: "vim", shell: "zsh" },
        working: { build: "make", mine: "A" },
        response: "ok",
      });
      for (const h of [a, b, c]) expect(h.extensionErrors()).toEqual([]);
    });
  });
}

describe("a branch restored to a past point keeps its selected past", () => {
  it("is not refreshed at its run's start, is told so, and adopts newer shared state with its next patch", async () => {
    const [a, b] = await started(2, true);
    a.script(call("patch_state", { session: { working: { v: 1 } }, final: true }), say("first"));
    await a.prompt("one");
    const firstAnswer = a.session.sessionManager
      .getEntries()
      .find(
        (e) => e.type === "message" && e.message.role === "assistant" && JSON.stringify(e.message).includes("first"),
      )!;
    a.script(call("patch_state", { session: { working: { v: 2 } }, final: true }), say("second"));
    await a.prompt("two");
    b.script(call("patch_state", { cwd: { contract: { db: "sqlite" } }, final: true }), say("B noted"));
    await b.prompt("we use sqlite");

    await a.session.navigateTree(firstAnswer.id);
    expect(a.accessor.read(0).state).toMatchObject({ response: "first", working: { v: 1 } });
    const before = a.contexts.length;
    a.script(call("patch_state", { session: { working: { v: 3 } }, final: true }), say("third"));
    await a.prompt("three");
    const seen = firstContextOf(a, before);
    expect(seen).toContain("## Restored branch");
    expect(seen).not.toContain('"db"');
    expect(movedLines(seen)).toEqual([]);
    // its own patch adopted the newer cwd (001: "On publication it adopts current proven live global/CWD streams")
    expect(a.accessor.read(0).state).toMatchObject({
      response: "third",
      working: { v: 3 },
      contract: { db: "sqlite" },
    });
    expect(a.extensionErrors()).toEqual([]);
  });
});
