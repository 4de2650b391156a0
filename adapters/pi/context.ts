// Context projection: what the model sees on each inference while State Flow owns the branch.
//
// Pi keeps the full trace; State Flow replaces what reaches the model between complete runs:
//   steady    [runtime context] + foreign custom messages + the complete current run
//   bootstrap [runtime context] + pre-Flow context (or the frozen stop handoff and what followed
//             it, after a restart) + the complete current run — exactly one migration run
//   passive   the frozen stop handoff + messages created after stop (State Flow is stopped)
// Boundaries are persistent custom messages in the branch (run anchors, stop handoffs), tagged
// with the physical session id so a fork never reads its parent's markers. Private resolution
// instructions only reach the model inside their own run, and only the newest one.

import type { AgentMessage } from "@earendil-works/pi-agent-core";
import type { ScopeState } from "../../storage/core/scope-state.ts";
import type { CompactTransition } from "../../storage/core/temporal.ts";
import { renderSpecification, type Specification } from "../../runtime/specification.ts";

export const RUN_ANCHOR = "state-flow-run";
export const STOP_HANDOFF = "state-flow-stop";
export const RESOLUTION_NOTE = "state-flow-resolution";
const OWN_TYPES = new Set([RUN_ANCHOR, STOP_HANDOFF, RESOLUTION_NOTE]);

export type ProjectionMode = "steady" | "bootstrap" | "passive";

export interface MarkerDetails {
  sessionId: string;
}

type Custom = Extract<AgentMessage, { role: "custom" }>;

function isCustom(message: AgentMessage): message is Custom {
  return message.role === "custom";
}

export function isOwnMessage(message: AgentMessage): boolean {
  return isCustom(message) && OWN_TYPES.has(message.customType);
}

function isMarker(message: AgentMessage, type: string, sessionId: string): boolean {
  return (
    isCustom(message) &&
    message.customType === type &&
    (message.details as MarkerDetails | undefined)?.sessionId === sessionId
  );
}

function lastIndex(messages: readonly AgentMessage[], predicate: (m: AgentMessage) => boolean): number {
  for (let i = messages.length - 1; i >= 0; i--) if (predicate(messages[i]!)) return i;
  return -1;
}

/** Index where the current run starts: its user prompt, else its anchor, else the beginning. */
export function currentRunStart(messages: readonly AgentMessage[], sessionId: string): number {
  const anchor = lastIndex(messages, (m) => isMarker(m, RUN_ANCHOR, sessionId));
  if (anchor < 0) return 0;
  return messages[anchor - 1]?.role === "user" ? anchor - 1 : anchor;
}

/** The current run without State Flow's own markers, discarded drafts and superseded resolution notes. */
function currentRun(messages: readonly AgentMessage[], discarded: ReadonlySet<number>): AgentMessage[] {
  const newestNote = lastIndex(messages, (m) => isCustom(m) && m.customType === RESOLUTION_NOTE);
  return messages.filter((m, i) => {
    if (m.role === "assistant" && discarded.has(m.timestamp)) return false;
    if (isCustom(m) && m.customType === RESOLUTION_NOTE) return i === newestNote;
    return !isOwnMessage(m);
  });
}

export interface ProjectionInput {
  messages: readonly AgentMessage[];
  mode: ProjectionMode;
  sessionId: string;
  /** Text of the synthetic runtime-context user message (steady and bootstrap). */
  runtimeContext: string;
  /** Timestamps of unresolved drafts discarded in this run. */
  discardedDrafts: ReadonlySet<number>;
}

export function runtimeContextMessage(text: string, timestamp: number): AgentMessage {
  return { role: "user", content: [{ type: "text", text }], timestamp } as AgentMessage;
}

/**
 * Where State Flow is not active (off, a fork) the context is Pi's own, minus State Flow's private
 * messages (run anchors, stop handoffs, resolution notes) and the drafts a resolution discarded,
 * which another branch or an earlier stop left in the transcript. null when there are none: Pi's
 * context stays untouched.
 */
export function withoutOwnMessages(
  messages: readonly AgentMessage[],
  discarded: ReadonlySet<number> = new Set(),
): AgentMessage[] | null {
  const kept = messages.filter((m) => !isOwnMessage(m) && !(m.role === "assistant" && discarded.has(m.timestamp)));
  return kept.length === messages.length ? null : kept;
}

/**
 * A failed-closed branch refuses user input; a run that starts anyway (another extension's
 * triggerTurn) sees only itself, from its starting message on: no earlier transcript, no state.
 */
export function closedRunOnly(messages: readonly AgentMessage[], discarded: ReadonlySet<number>): AgentMessage[] {
  const start = lastIndex(messages, (m) => m.role === "user" || (isCustom(m) && !isOwnMessage(m)));
  return withoutOwnMessages(messages.slice(Math.max(start, 0)), discarded) ?? messages.slice(Math.max(start, 0));
}

export function projectContext(input: ProjectionInput): AgentMessage[] {
  const { messages, mode, sessionId } = input;
  const stop = lastIndex(messages, (m) => isMarker(m, STOP_HANDOFF, sessionId));
  if (mode === "passive") {
    const from = Math.max(stop, 0);
    return messages.slice(from).filter((m, i) => (i === 0 && stop >= 0) || !isOwnMessage(m));
  }
  const start = currentRunStart(messages, sessionId);
  const before = messages.slice(0, start);
  const run = currentRun(messages.slice(start), input.discardedDrafts);
  const context = runtimeContextMessage(input.runtimeContext, messages[start]?.timestamp ?? 0);
  if (mode === "bootstrap") {
    const from = stop >= 0 && stop < start ? stop : 0;
    const preFlow = before.slice(from).filter((m, i) => (i === 0 && stop >= 0 && stop < start) || !isOwnMessage(m));
    return [context, ...preFlow, ...run];
  }
  const foreign = before.filter((m) => isCustom(m) && !isOwnMessage(m));
  return [context, ...foreign, ...run];
}

// ---- runtime context text -------------------------------------------------------------------

export interface RuntimeContextInput {
  /** The user's request the run works toward (see runtime/specification.ts). */
  specification: Specification;
  state: ScopeState;
  step: number;
  transitions: CompactTransition[];
  /** The run's artifact_invalidations plan ({path, reason} only), or why it could not be made. */
  invalidations: readonly { path: string; reason: string }[] | { unavailable: string };
  resolutionNote: string | null;
  bootstrap: boolean;
}

/** state[0]'s JSON per state object: a run's inferences pass the same object until a patch replaces it. */
const renderedStates = new WeakMap<ScopeState, string>();

function stateJson(state: ScopeState): string {
  let json = renderedStates.get(state);
  if (json === undefined) renderedStates.set(state, (json = JSON.stringify(state, null, 2)));
  return json;
}

export function renderRuntimeContext(input: RuntimeContextInput): string {
  // What changes least comes first, so that a provider's prefix cache keeps as much of it as it
  // can from one inference to the next: state (stable scopes and fields before volatile ones),
  // then what belongs to this run and this step.
  const lines: string[] = [
    "[State Flow runtime context — assistant-produced state, fallible; it is not an instruction]",
    "",
    "## state[0] — effective state (global → cwd → session)",
    "```json",
    stateJson(input.state),
    "```",
    `(state[0] is the state at step ${input.step})`,
    "",
    "## Current specification (the user's request for this run)",
    ...renderSpecification(input.specification),
    "",
    "## Recent transitions (newest first)",
  ];
  if (input.transitions.length === 0) lines.push("(none since this lineage's origin)");
  for (const t of input.transitions) {
    const parts = Object.entries(t.changes).map(([scope, paths]) => `${scope}: ${paths.join(", ")}`);
    lines.push(`- step ${t.step}: ${parts.length > 0 ? parts.join("; ") : "(records folded into checkpoints)"}`);
  }
  lines.push("", "## Artifact invalidations");
  if ("unavailable" in input.invalidations) lines.push(`(unavailable: ${input.invalidations.unavailable})`);
  else if (input.invalidations.length === 0)
    lines.push("(none: no discovered Knowledge source is new or known to be stale)");
  else for (const inv of input.invalidations) lines.push(`- ${inv.path}: ${inv.reason}`);
  if (input.bootstrap) {
    lines.push(
      "",
      "## Bootstrap",
      "This is the migration run: the earlier conversation below is visible only now. Move whatever stays relevant " +
        "into state with patch_state before you finish; later runs will not see it.",
    );
  }
  if (input.resolutionNote) lines.push("", "## Resolution", input.resolutionNote);
  return lines.join("\n");
}

/**
 * Protocol text appended to the system prompt while State Flow is active. It states each rule
 * once; what the tools' own descriptions already say (the fields, the merge rules, final:true's
 * effect) is not repeated here, since both ride along in every request.
 */
export const PROTOCOL = [
  "## State Flow protocol",
  "Your durable memory is State Flow state, one per scope. The runtime-context message holds the current " +
    "request, the effective state[0] and recent transitions; earlier runs are not replayed.",
  "- patch_state is the only way to change state, except response: the runtime records your accepted answer. " +
    "Call patch_state alone in its message: any other tool call beside it is blocked.",
  "- Patch only established, future-relevant facts (decisions, verified results, open questions, exact " +
    "continuation), never narration. Keep requirements, observations, conclusions and hypotheses distinct; " +
    "recheck volatile facts; after an interruption or a restore, inspect external effects before repeating an " +
    "operation. Never put secrets in state.",
  '- Before your final answer, call patch_state with final:true (alone as {"final":true} when nothing changed); ' +
    "without it your answer is not accepted and you will be asked again.",
  "- read_state only for a concrete gap in older or scope-specific state.",
  "- Work from artifacts first. Read a source only for a concrete gap its artifact does not cover, an operation " +
    "on that exact source, an entry under Artifact invalidations, a contradiction, or an explicit request, never " +
    "for reassurance. After reading a listed source, patch a compact global artifact at its exact path (routing, " +
    "not its text); never write hashes or compiler fields.",
].join("\n");
