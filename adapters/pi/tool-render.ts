// What a person sees of a patch_state result in Pi's TUI. The tool result's text is written for the
// model ("state[0] is rebuilt for your next inference; do not restate it"); the row Pi draws for it
// says in the person's terms what happened — recorded, ready for the answer, or refused and why —
// and shows the model's text only when the row is expanded. The model's context is unchanged.

import type { AgentToolResult, Theme, ToolRenderResultOptions } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";
import type { TextComponent } from "./pi-host.ts";

type Tone = "success" | "warning" | "error" | "muted";

interface PatchDetails {
  step?: number;
  scopes?: readonly string[];
  final?: boolean;
  transition?: string | null;
}

/** The person's line for a patch_state result (`isError`: Pi's flag for a refused call), and its tone. */
export function patchResultLine(
  result: { content: readonly { type: string; text?: string }[]; details?: unknown },
  isError: boolean,
): { tone: Tone; text: string } {
  const text = result.content.map((c) => c.text ?? "").join("");
  if (isError) {
    const cause = text.split("\n")[0]!.replace(/^Error:\s*/, "");
    return { tone: "error", text: `State Flow refused this patch: ${cause}` };
  }
  const details = (result.details ?? {}) as PatchDetails;
  if (details.transition === null || details.step === undefined) {
    return { tone: "muted", text: "State Flow: nothing to change; the next complete answer is recorded" };
  }
  const scopes = details.scopes?.length ? ` (${details.scopes.join(", ")})` : "";
  const final = details.final ? "; the next complete answer is recorded" : "";
  return { tone: "success", text: `State Flow recorded step ${details.step}${scopes}${final}` };
}

/** Pi's renderResult for patch_state, drawn with Pi's `Text`: the person's line; expanded, the model's text too. */
export function patchResultRenderer(Text: TextComponent) {
  return (
    result: AgentToolResult<unknown>,
    options: ToolRenderResultOptions,
    theme: Theme,
    context: { isError?: boolean },
  ): Component => {
    if (options.isPartial) return new Text(theme.fg("warning", "State Flow: recording…"), 0, 0);
    const line = patchResultLine(result as never, context.isError === true);
    const model = (result.content as { text?: string }[]).map((c) => c.text ?? "").join("");
    const head = theme.fg(line.tone, line.text);
    return new Text(options.expanded ? `${head}\n${theme.fg("dim", model)}` : head, 0, 0);
  };
}
