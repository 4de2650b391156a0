// The current specification: the user's request the model works toward, shown in every runtime
// context. A run a user prompt starts replaces it. A run a message starts (another extension's
// `sendMessage(…, {triggerTurn: true})`) is not a new user request, so it continues the current
// one and says what started it. User messages Pi delivers inside a run (steering, queued
// follow-ups) are user requests too: they are added to it, in order.

export type RunTrigger =
  | { readonly kind: "prompt"; readonly text: string }
  /** `source`: the starting message's customType, when the host knows it. */
  | { readonly kind: "message"; readonly source: string | null };

export interface Specification {
  /** The prompt of the newest run a user started ("" before the first one). */
  readonly request: string;
  /** User messages delivered inside runs since that prompt, oldest first. */
  readonly added: readonly string[];
  /** What started the current run when it was not a user prompt (null: a prompt started it). */
  readonly startedBy: { readonly source: string | null } | null;
}

export const NO_SPECIFICATION: Specification = { request: "", added: [], startedBy: null };

export function specificationForRun(current: Specification, trigger: RunTrigger): Specification {
  if (trigger.kind === "prompt") return { request: trigger.text, added: [], startedBy: null };
  return { ...current, startedBy: { source: trigger.source } };
}

/** A run that began unnamed (see adapters/pi/pi-versions.ts) learns its source from its first message. */
export function withRunSource(current: Specification, source: string): Specification {
  return current.startedBy ? { ...current, startedBy: { source } } : current;
}

export function withUserMessage(current: Specification, text: string): Specification {
  return { ...current, added: [...current.added, text] };
}

/** The specification section of the runtime context. */
export function renderSpecification(spec: Specification): string[] {
  const lines = [spec.request.trim() || "(none yet: no user request in this session so far)"];
  if (spec.added.length > 0) {
    lines.push("", "Added by the user during the run, in order (newest last):");
    for (const text of spec.added) lines.push(`- ${text.trim() || "(empty)"}`);
  }
  if (spec.startedBy) {
    const source = spec.startedBy.source ? ` (${spec.startedBy.source})` : "";
    lines.push(
      "",
      `This run was started by a message${source}, not by a new user request: the request above still applies.`,
    );
  }
  return lines;
}
