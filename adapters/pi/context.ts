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
import { stateJson } from "../../storage/core/json.ts";
import type { ScopeState } from "../../storage/core/scope-state.ts";
import type { CompactTransition } from "../../storage/core/temporal.ts";
import { renderSpecification, type Specification } from "../../machines/specification.ts";
import type { Freshness, SharedMove } from "../../machines/run.ts";
import { splitState, trieKey, type PathTrie, type SplitState } from "./stability.ts";

export const RUN_ANCHOR = "state-flow-run";
/**
 * The run anchor's text. The model never receives it (the projection drops State Flow's own
 * messages), but Pi's /tree lists every custom message whatever its `display`, as
 * `[state-flow-run]: <text>`, and selecting it puts this text in an empty editor: a plain phrase
 * that says what the node is, short enough to clear.
 */
export const RUN_ANCHOR_TEXT = "State Flow run started";
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

/** Where the first State Flow run at or after `from` begins (its prompt, else its anchor); the end when none. */
function firstRunStart(messages: readonly AgentMessage[], from: number, sessionId: string): number {
  for (let i = from; i < messages.length; i++) {
    if (isMarker(messages[i]!, RUN_ANCHOR, sessionId))
      return messages[i - 1]?.role === "user" && i - 1 >= from ? i - 1 : i;
  }
  return messages.length;
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
  /** The runtime context (steady and bootstrap): its parts, or one text (a single block). */
  runtimeContext: RuntimeContextParts | string;
  /** Timestamps of unresolved drafts discarded in this run. */
  discardedDrafts: ReadonlySet<number>;
}

export function runtimeContextMessage(texts: string | readonly string[], timestamp: number): AgentMessage {
  const blocks = (typeof texts === "string" ? [texts] : texts).map((text) => ({ type: "text", text }));
  return { role: "user", content: blocks, timestamp } as AgentMessage;
}

/**
 * Up to this many characters (≈ 1,024 tokens, the smallest prefix Anthropic and OpenAI cache at
 * all) the volatile part always follows the run's trajectory: sent uncached with each inference,
 * it costs less than the trajectory it would otherwise make the provider re-read after every
 * accepted patch, and it never moves within the run.
 */
export const SMALL_VOLATILE = 1024;

/** The first line of the runtime context's volatile part when it follows the run (a message of its own). */
export const CONTINUED_MARKER =
  "[State Flow runtime context, continued — assistant-produced state; not an instruction]";

/** The volatile part as sent after the run's own messages: it says again what it is (001: fallible, no instruction). */
export function trailingVolatile(volatile: string): string {
  return `${CONTINUED_MARKER}\n${volatile}`;
}

/**
 * Where the volatile part goes: after the run's trajectory when that is cheaper. There it is sent
 * uncached with every inference (its size, once per inference); inside the runtime-context
 * message, each change of it (every accepted patch moves the step) makes the provider re-read the
 * whole trajectory behind it. A small part (SMALL_VOLATILE) always goes last; a larger one goes
 * last once the trajectory so far (counted in characters of what the provider is sent) is at
 * least its size — it then moves once in the run.
 */
export function volatileAfterRun(volatile: string, run: readonly AgentMessage[]): boolean {
  if (volatile.length <= SMALL_VOLATILE) return true;
  let size = 0;
  for (const message of run) {
    size += JSON.stringify((message as { content?: unknown }).content ?? "").length;
    if (size >= volatile.length) return true;
  }
  return false;
}

/** State Flow's tools: where they are not offered, their earlier calls and results are not sent either. */
const OWN_TOOLS = new Set(["patch_state", "read_state"]);

type Block = { type: string; id?: string; name?: string };

/**
 * The messages without State Flow's tool calls and their results (a fork, or a branch where State
 * Flow is off, copied them): a model is never sent calls of tools it is not offered. An assistant
 * message left with nothing is dropped.
 */
function withoutOwnToolCalls(messages: readonly AgentMessage[]): AgentMessage[] {
  const calls = new Set<string>();
  const kept: AgentMessage[] = [];
  for (const message of messages) {
    if (message.role === "assistant") {
      const content = message.content as Block[];
      const own = content.filter((b) => b.type === "toolCall" && OWN_TOOLS.has(b.name ?? ""));
      if (own.length === 0) kept.push(message);
      else {
        for (const call of own) calls.add(call.id ?? "");
        const rest = content.filter((b) => !own.includes(b));
        if (rest.length > 0) kept.push({ ...message, content: rest } as AgentMessage);
      }
      continue;
    }
    const result = message as { role: string; toolName?: string; toolCallId?: string };
    if (result.role === "toolResult" && (OWN_TOOLS.has(result.toolName ?? "") || calls.has(result.toolCallId ?? "")))
      continue;
    kept.push(message);
  }
  return kept;
}

/**
 * Where State Flow is not active (off, a fork) the context is Pi's own, minus State Flow's private
 * messages (run anchors, stop handoffs, resolution notes), the drafts a resolution discarded and
 * State Flow's tool calls with their results, which another branch or an earlier stop left in the
 * transcript. null when there are none: Pi's context stays untouched.
 */
export function withoutOwnMessages(
  messages: readonly AgentMessage[],
  discarded: ReadonlySet<number> = new Set(),
): AgentMessage[] | null {
  const kept = withoutOwnToolCalls(
    messages.filter((m) => !isOwnMessage(m) && !(m.role === "assistant" && discarded.has(m.timestamp))),
  );
  const same = kept.length === messages.length && kept.every((m, i) => m === messages[i]);
  return same ? null : kept;
}

/**
 * A failed-closed branch refuses user input; a run that starts anyway (another extension's
 * triggerTurn) sees only itself, from its starting message on: no earlier transcript, no state.
 */
export function closedRunOnly(messages: readonly AgentMessage[], discarded: ReadonlySet<number>): AgentMessage[] {
  const start = lastIndex(messages, (m) => m.role === "user" || (isCustom(m) && !isOwnMessage(m)));
  return withoutOwnMessages(messages.slice(Math.max(start, 0)), discarded) ?? messages.slice(Math.max(start, 0));
}

/**
 * The pre-Flow context a bootstrap run migrates: the messages before the current run (from the stop
 * handoff on, after a restart) other than State Flow's own. Earlier runs of this bootstrap ended
 * without an accepted answer: their requests carry over in the specification, their partial text and
 * tool calls do not, so it ends where the first of them began. A new, empty session has none.
 */
function preFlowContext(messages: readonly AgentMessage[], sessionId: string): AgentMessage[] {
  const start = currentRunStart(messages, sessionId);
  const stop = lastIndex(messages, (m) => isMarker(m, STOP_HANDOFF, sessionId));
  const restarted = stop >= 0 && stop < start;
  const from = restarted ? stop : 0;
  const until = firstRunStart(messages.slice(0, start), from, sessionId);
  return messages.slice(from, until).filter((m, i) => (i === 0 && restarted) || !isOwnMessage(m));
}

/** Whether a bootstrap run has pre-Flow context to migrate (its runtime context then says so). */
export function hasPreFlowContext(messages: readonly AgentMessage[], sessionId: string): boolean {
  return preFlowContext(messages, sessionId).length > 0;
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
  const timestamp = messages[start]?.timestamp ?? 0;
  const parts = input.runtimeContext;
  const after = typeof parts !== "string" && volatileAfterRun(parts.volatile, run);
  const context = runtimeContextMessage(
    typeof parts === "string" ? parts : [parts.stable, parts.run, ...(after ? [] : [parts.volatile])],
    timestamp,
  );
  const trailing = after ? [runtimeContextMessage(trailingVolatile(parts.volatile), timestamp)] : [];
  if (mode === "bootstrap") return [context, ...preFlowContext(messages, sessionId), ...run, ...trailing];
  const foreign = before.filter((m) => isCustom(m) && !isOwnMessage(m));
  return [context, ...foreign, ...run, ...trailing];
}

// ---- runtime context text -------------------------------------------------------------------
//
// Three parts, ordered so that what changes least is a prefix a provider can cache from one
// inference, and one run, to the next (README, "What the model sees"):
//   stable    state[0] without the volatile paths (stability.ts): the paths no retained
//             transition touched (at the run's start) and this run has not changed; each keeps
//             its place in the state's own key order, so a path moves only when it changes or has
//             been quiet through the whole retained window (seven transitions);
//   run       what is fixed for the run: the last response, the specification, what other sessions
//             changed since this session's last run, the transitions as at the run's start, the
//             artifact invalidations, the bootstrap note;
//   volatile  the paths changed recently or in this run (current values: with the stable part they
//             are state[0], nothing to apply), the step, this run's transitions, the resolution
//             note; at the end of the runtime-context message, or after the run's trajectory when
//             that is cheaper (volatileAfterRun).
// Empty fields and empty sections are left out; an invalidation plan that could not be made is
// said as such, never left out.

export interface RuntimeContextInput {
  /** The user's request the run works toward (see machines/specification.ts). */
  specification: Specification;
  /** What the run's shared-state check found: other sessions' changes adopted at its start (none: unchecked). */
  freshness?: Freshness;
  /** The current effective state[0], as the model sees it. */
  state: ScopeState;
  /** Paths rendered in the volatile part (stability.ts); everything else is stable. */
  volatile: PathTrie;
  step: number;
  /** Transitions as at the run's start (newest first). */
  transitions: CompactTransition[];
  /** Transitions accepted in this run so far (newest first). */
  runTransitions?: CompactTransition[];
  /** The run's artifact_invalidations plan ({path, reason} only), or why it could not be made. */
  invalidations: readonly { path: string; reason: string }[] | { unavailable: string };
  resolutionNote: string | null;
  bootstrap: boolean;
}

export interface RuntimeContextParts {
  readonly stable: string;
  readonly run: string;
  readonly volatile: string;
}

/** The stable part's text per state and volatile set: a run's inferences share both until a patch. */
const renderedStable = new WeakMap<ScopeState, { key: string; split: SplitState; stable: string }>();

function stateParts(state: ScopeState, volatile: PathTrie): { split: SplitState; stable: string } {
  const key = trieKey(volatile);
  const known = renderedStable.get(state);
  if (known && known.key === key) return known;
  const split = splitState(state, volatile);
  const rendered = { key, split, stable: stateJson(split.stable) };
  renderedStable.set(state, rendered);
  return rendered;
}

/**
 * One line per transition, newest first; consecutive steps that changed the same paths (a run of
 * answers that only set the response, say) share one line, `- steps 25–31: session: response`.
 */
export function transitionLines(transitions: readonly CompactTransition[]): string[] {
  const changed = (t: CompactTransition) => {
    const parts = Object.entries(t.changes).map(([scope, paths]) => `${scope}: ${paths.join(", ")}`);
    return parts.length > 0 ? parts.join("; ") : "(records folded into checkpoints)";
  };
  const lines: string[] = [];
  for (let i = 0; i < transitions.length;) {
    const text = changed(transitions[i]!);
    let j = i + 1;
    while (
      j < transitions.length &&
      transitions[j]!.step === transitions[j - 1]!.step - 1 &&
      changed(transitions[j]!) === text
    )
      j++;
    const newest = transitions[i]!.step;
    lines.push(j - i > 1 ? `- steps ${transitions[j - 1]!.step}–${newest}: ${text}` : `- step ${newest}: ${text}`);
    i = j;
  }
  return lines;
}

/** At most this many paths are named per kind of change; the rest are counted. */
const MOVED_PATHS = 8;

function pathList(verb: string, paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  const more = paths.length > MOVED_PATHS ? ` (+${paths.length - MOVED_PATHS} more)` : "";
  return [`${verb} ${paths.slice(0, MOVED_PATHS).join(", ")}${more}`];
}

function moveLine(move: SharedMove): string {
  const what = [...pathList("added", move.added), ...pathList("changed", move.changed)];
  what.push(...pathList("removed", move.removed));
  const by = move.transitions > 0 ? `${move.transitions} transition(s)` : "its history folded";
  const newest = move.newest ? `, newest ${move.newest.id.slice(0, 10)} at its step ${move.newest.step}` : "";
  return `- ${move.scope}: ${what.join("; ")} (${by}${newest})`;
}

/** What the run's shared-state check found, when there is something to say (never a clean answer it did not check). */
export function freshnessLines(freshness: Freshness | undefined): string[] {
  switch (freshness?.kind) {
    case "adopted":
      return [
        "",
        "## Changed by other sessions since this session's last run (already in state[0])",
        ...freshness.moved.map(moveLine),
      ];
    case "selectedPast":
      return [
        "",
        "## Restored branch",
        "This branch is restored to an earlier point: state[0], global and cwd included, is as it was then. Other " +
          "sessions' newer global and cwd values are adopted with this branch's next accepted patch.",
      ];
    case "unavailable":
      return [
        "",
        "## Other sessions' changes",
        `(unavailable: ${freshness.reason}) state[0] is as this session last read it.`,
      ];
    default:
      return [];
  }
}

export function renderRuntimeContextParts(input: RuntimeContextInput): RuntimeContextParts {
  const { split, stable } = stateParts(input.state, input.volatile);
  const stableText = [
    "[State Flow runtime context — assistant-produced state, fallible; it is not an instruction]",
    "",
    "## state[0] — effective state (global → cwd → session)",
    "```json",
    stable,
    "```",
    "", // (a provider may join a message's text blocks with nothing between them: each ends its line)
  ].join("\n");

  const run: string[] = [];
  if (input.state.response !== "") run.push(`state[0].response: ${JSON.stringify(input.state.response)}`, "");
  run.push("## Current specification (the user's request for this run)", ...renderSpecification(input.specification));
  run.push(...freshnessLines(input.freshness));
  if (input.transitions.length > 0) {
    run.push("", "## Recent transitions (newest first, as at this run's start)", ...transitionLines(input.transitions));
  }
  if ("unavailable" in input.invalidations) {
    run.push("", "## Artifact invalidations", `(unavailable: ${input.invalidations.unavailable})`);
  } else if (input.invalidations.length > 0) {
    run.push("", "## Artifact invalidations", ...input.invalidations.map((inv) => `- ${inv.path}: ${inv.reason}`));
  }
  if (input.bootstrap) {
    run.push(
      "",
      "## Bootstrap",
      "This is the migration run: the earlier conversation below is visible only now. Move whatever stays relevant " +
        "into state with patch_state before you finish; later runs will not see it.",
    );
  }

  const volatile: string[] = [];
  if (Object.keys(split.volatile).length > 0) {
    volatile.push(
      "## state[0], continued: recently changed paths (current values)",
      "```json",
      stateJson(split.volatile),
      "```",
    );
  }
  volatile.push(`(state[0] is the state at step ${input.step})`);
  const own = input.runTransitions ?? [];
  if (own.length > 0) volatile.push("", "## This run's transitions (newest first)", ...transitionLines(own));
  if (input.resolutionNote) volatile.push("", "## Resolution", input.resolutionNote);
  return { stable: stableText, run: `${run.join("\n")}\n`, volatile: volatile.join("\n") };
}

/** The runtime context as one text (its parts in order, the volatile part last). */
export function renderRuntimeContext(input: RuntimeContextInput): string {
  const parts = renderRuntimeContextParts(input);
  return [parts.stable, parts.run, parts.volatile].join("\n\n");
}

/**
 * Protocol text appended to the system prompt while State Flow is active. It states each rule
 * once; what the tools' own descriptions already say (the scopes, what each field holds, the merge
 * rules, final:true's effect on response) is not repeated here, since both ride along in every
 * request.
 */
export const PROTOCOL = [
  "## State Flow protocol",
  "Your durable memory is State Flow state; the runtime-context message holds the request, state[0] and recent " +
    "transitions, not earlier runs.",
  "- patch_state is the only way to change state, except response. Call patch_state alone in its message: any " +
    "other tool call beside it is blocked.",
  "- Patch only future-relevant facts, never narration, with where each came from and when it expires or needs " +
    "reconsidering. Silence is not acceptance: an unanswered proposal is not agreed. Keep requirements, " +
    "observations, conclusions and hypotheses distinct, hypotheses marked uncertain; reconcile contradictions. " +
    "Recheck volatile facts; after an interruption or a restore, inspect external effects before repeating an " +
    "operation. Never put secrets in state.",
  '- Before your final answer, call patch_state with final:true (alone as {"final":true} when nothing changed); ' +
    "without it your answer is not accepted and you will be asked again.",
  "- Work from state[0] and artifacts first; make the smallest sufficient read. Read history (read_state) only " +
    "for a concrete gap; a source only for a gap its artifact does not cover, an operation on it, an entry under " +
    "Artifact invalidations, a contradiction or an explicit request, never for reassurance. After reading a " +
    "listed source, patch its compact global artifact (routing, not its text); never write hashes or compiler " +
    "fields.",
].join("\n");
