// Nothing the user asked is forgotten (issue 28): a run that ends without an accepted answer
// (aborted, a provider error, the length limit, a store that refused every write) keeps the user's
// request, and the next runs' specification carries it as an earlier, interrupted request until a
// run's answer is accepted; the interrupted run's partial text and tool calls never reach them. The
// carried requests are recorded on the branch, so a resumed session (another `pi -c`) carries them
// too, and a /tree to a point before the interruption does not. Real Pi sessions.
import { join } from "node:path";
import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, holdForeignLock, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();
const CARRIED = "Earlier requests whose runs were interrupted before an answer was accepted";

/** The specification section of a context: from its heading to the next heading. */
function specificationOf(text: string): string {
  const at = text.indexOf("## Current specification");
  const end = text.indexOf("\n## ", at + 1);
  return text.slice(at, end < 0 ? undefined : end);
}

describe("interrupted requests carry over", () => {
  it.each(["aborted", "error", "length"] as const)(
    "a %s run's request is carried by the next run, without its partial text or tool calls, until one answers",
    async (stopReason) => {
      const h = await harness();
      await h.command("/state-flow-start");
      h.script(call("read_state", {}), () => say("PARTIAL TEXT of the interrupted run", stopReason)());
      await h.prompt("remember port 8080");
      expect(h.accessor.read(0).state.response).toBe("");

      const before = h.contexts.length;
      h.script(call("patch_state", { session: { working: { port: 8080 } }, final: true }), say("noted 8080"));
      await h.prompt("and the host is localhost");
      const seen = contextText(h.contexts[before]!);
      const spec = specificationOf(seen);
      expect(spec).toContain("and the host is localhost");
      expect(spec).toContain(CARRIED);
      expect(spec).toContain("- remember port 8080");
      expect(seen).not.toContain("PARTIAL TEXT");
      const roles = h.contexts[before]!.messages.map((m) => m.role);
      // (runtime context, the prompt, the volatile part after it: no assistant message, no tool result)
      expect(roles, "the interrupted run's text, tool call and result are not replayed").toEqual([
        "user",
        "user",
        "user",
      ]);

      // The answer was accepted: the next run carries nothing.
      const after = h.contexts.length;
      h.script(call("patch_state", { final: true }), say("done"));
      await h.prompt("thanks");
      expect(specificationOf(contextText(h.contexts[after]!))).not.toContain(CARRIED);
      expect(h.extensionErrors()).toEqual([]);
    },
  );

  it("several interrupted runs in a row keep every request, oldest first", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    for (const text of ["first ask", "second ask", "third ask"]) {
      h.script(say(`partial ${text}`, "aborted"));
      await h.prompt(text);
    }
    const before = h.contexts.length;
    h.script(call("patch_state", { final: true }), say("all done"));
    await h.prompt("fourth ask");
    const spec = specificationOf(contextText(h.contexts[before]!));
    expect(spec.indexOf("- first ask")).toBeGreaterThan(0);
    expect(spec.indexOf("- second ask")).toBeGreaterThan(spec.indexOf("- first ask"));
    expect(spec.indexOf("- third ask")).toBeGreaterThan(spec.indexOf("- second ask"));
  });

  it("a request the store refused (lock held by another writer) is carried once the store works again", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("bootstrap done"));
    await h.prompt("hello");
    const lock = join(h.storeRoot, ".git", "state-flow-publication.lock");
    holdForeignLock(lock);
    h.script(
      call("patch_state", { cwd: { contract: { deploy: "staging" } }, final: true }),
      say("refused 1"),
      say("refused 2"),
      say("refused 3"),
    );
    await h.prompt("deploy target is staging");
    // The person is told why: the refusal itself, not "ask again" (which cannot help while the lock is held).
    const exhausted = h.notices.find((n) => n.level === "error" && /did not accept the answer/.test(n.message));
    expect(exhausted?.message).toMatch(/the model's patch_state calls were refused, .* The refusal: .*lock/);
    expect(exhausted?.message).toMatch(/fix what it names, then ask again\.$/);
    rmSync(lock);

    const before = h.contexts.length;
    h.script(
      call("patch_state", { cwd: { contract: { deploy: "staging" } }, final: true }),
      say("deploying to staging"),
    );
    await h.prompt("go on");
    expect(specificationOf(contextText(h.contexts[before]!))).toContain("- deploy target is staging");
    expect(h.accessor.read(0, "cwd").state.contract).toEqual({ deploy: "staging" });
  });

  it("a resumed session carries them; a /tree to before the interruption does not", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("answered"));
    await h.prompt("an answered request");
    const answered = h.session.sessionManager.getLeafId()!;
    h.script(say("cut off", "aborted"));
    await h.prompt("remember port 8080");

    const resumed = await harness({ shareWith: h, openFile: h.session.sessionManager.getSessionFile()! });
    resumed.script(call("patch_state", { final: true }), say("noted"));
    await resumed.prompt("next");
    expect(specificationOf(contextText(resumed.contexts[0]!))).toContain("- remember port 8080");

    await h.session.navigateTree(answered);
    const before = h.contexts.length;
    h.script(call("patch_state", { final: true }), say("fine"));
    await h.prompt("another branch");
    expect(specificationOf(contextText(h.contexts[before]!))).not.toContain(CARRIED);
  });
});
