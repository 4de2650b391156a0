// Knowledge discovery through a real Pi session: the runtime context's artifact_invalidations
// lists the Markdown sources under <agentDir>/knowledge that have no artifact yet, nested alike,
// never a symlink, an uppercase .MD or a file outside the root; a compiled source leaves the list.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
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
    expect(next, "a compiled source leaves the plan").not.toContain(join(root, "a.md"));
    expect(next).toContain(`- ${join(root, "nested", "b.md")}: new`);
    await h.command("/state-flow-status");
    expect(h.lastNotice()!.message).toContain(`stale artifacts: 1 (1 new): ${join(root, "nested", "b.md")} (new)`);
  });

  it("without a Knowledge root nothing is stale, and the context says so in words, not as an empty list", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("ok"));
    await h.prompt("Anything?");
    expect(section(contextText(h.contexts[0]!))).toContain(
      "(none: no discovered Knowledge source is new or known to be stale)",
    );
  });
});
