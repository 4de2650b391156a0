import { Text } from "@earendil-works/pi-tui";
import { describe, expect, it } from "vitest";
import { patchResultLine, patchResultRenderer } from "../../../adapters/pi/tool-render.ts";

const result = (text: string, details?: unknown) => ({ content: [{ type: "text", text }], details });
const renderPatchResult = patchResultRenderer(Text);
const plainTheme = { fg: (_tone: string, text: string) => text } as never;

describe("patch_state as the person sees it", () => {
  it("a recorded step in plain words, not the model's instruction", () => {
    const accepted = result("Accepted transition step 3 (cwd, session). … do not restate it.", {
      step: 3,
      scopes: ["cwd", "session"],
      final: true,
      transition: "t-1",
    });
    expect(patchResultLine(accepted, false)).toEqual({
      tone: "success",
      text: "State Flow recorded step 3 (cwd, session); the next complete answer is recorded",
    });
    const finalOnly = result("Terminal eligibility latched (final:true); …", { final: true, transition: null });
    expect(patchResultLine(finalOnly, false).text).toBe(
      "State Flow: nothing to change; the next complete answer is recorded",
    );
  });

  it("a refusal names its cause", () => {
    const refused = result("the cwd scope advanced in another session since this branch read it; nothing was written.");
    expect(patchResultLine(refused, true)).toEqual({
      tone: "error",
      text:
        "State Flow refused this patch: the cwd scope advanced in another session since this branch read it; " +
        "nothing was written.",
    });
  });

  it("collapsed shows the line only; expanded adds the model's text", () => {
    const accepted = result("Accepted transition step 1 (session).", { step: 1, scopes: ["session"], transition: "t" });
    const collapsed = renderPatchResult(accepted as never, { expanded: false, isPartial: false }, plainTheme, {});
    expect(collapsed.render(200).join("\n")).toContain("State Flow recorded step 1 (session)");
    expect(collapsed.render(200).join("\n")).not.toContain("Accepted transition");
    const expanded = renderPatchResult(accepted as never, { expanded: true, isPartial: false }, plainTheme, {});
    expect(expanded.render(200).join("\n")).toContain("Accepted transition step 1 (session).");
  });
});
