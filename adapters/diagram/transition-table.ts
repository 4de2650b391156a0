// Markdown transition tables generated from a machine's state nodes; `npm run machines` embeds each
// machine's tables in docs/state-machines.md, so the tables cannot drift from the code. Pure.
//
// Transitions: `| From | Event | Guard | To | Actions |`, one row per transition (each branch of a
// guarded list separately), in document order of the state tree, then the order XState tries them.
// - From: dotted path of the state that declares the transition. `(root)` is the machine itself: the
//   transition applies in every state. A compound state's own path (e.g. `active`) means the
//   transition applies in each of its substates, unless the substate handles the event first.
// - Event: the event type; `always` for an eventless transition; `after 500 ms` (or `after <delay
//   name>`) for a delayed one.
// - Guard: the named guard, with params as `name(key: value)` and higher-order guards as `not(a)`,
//   `and(a, b)`; `otherwise` for the unguarded fallback of a guarded list; `(inline)` for an
//   anonymous guard function; `—` when the transition is unguarded.
// - To: dotted target path(s), a history target by its history node's path; `unchanged` when the
//   transition has no target (actions only, no state change).
// - Actions: the actions in order, named ones by name with params as `name(key: value)` (`name(…)`
//   when the params are computed), inline functions as `(inline)`; `—` when there are none.
// Entry and exit actions are a second table, `| State | Entry | Exit |`, with one row per state that
// has any (the timer actions XState adds for `after` are left out), or one line saying there are none.
// Initial states are not rows: the diagram shows them.
import type { AnyStateMachine, AnyStateNode } from "xstate";
import { nameOf, stateNodesInOrder, transitionLists, type AnyTransition } from "../../machines/graph.ts";

/** One table cell fragment: an identifier is rendered as a code span, a keyword as plain text. */
export interface Label {
  text: string;
  code: boolean;
}

export interface TransitionRow {
  from: Label;
  event: Label;
  guard: Label;
  /** Empty: the transition has no target (`unchanged`). */
  to: Label[];
  actions: Label[];
}

export interface EntryExitRow {
  state: Label;
  entry: Label[];
  exit: Label[];
}

const code = (text: string): Label => ({ text, code: true });
const word = (text: string): Label => ({ text, code: false });
const NONE = word("—");
const INLINE = word("(inline)");

const pathOf = (node: { path: readonly string[] }): Label =>
  node.path.length === 0 ? word("(root)") : code(node.path.join("."));

function formatValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  return JSON.stringify(value) ?? String(value);
}

function formatParams(params: unknown): string {
  if (typeof params === "function") return "…";
  if (params && typeof params === "object" && !Array.isArray(params))
    return Object.entries(params)
      .map(([k, v]) => `${k}: ${formatValue(v)}`)
      .join(", ");
  return formatValue(params);
}

/** `name` or `name(params)` for a named reference (`"name"` or `{type, params}`); null if inline. */
function referenceText(ref: unknown): string | null {
  if (typeof ref === "string") return ref;
  if (ref && typeof ref === "object" && typeof (ref as { type?: unknown }).type === "string") {
    const { params } = ref as { params?: unknown };
    return params === undefined ? nameOf(ref) : `${nameOf(ref)}(${formatParams(params)})`;
  }
  return null;
}

/** Higher-order guards (`and`, `or`, `not`) are functions that carry the guards they combine. */
function guardText(guard: unknown): string {
  const named = referenceText(guard);
  if (named !== null) return named;
  const inner = (guard as { guards?: unknown } | null)?.guards;
  if (typeof guard === "function" && Array.isArray(inner)) return `${guard.name}(${inner.map(guardText).join(", ")})`;
  return "(inline)";
}

function guardLabel(t: AnyTransition, list: readonly AnyTransition[], index: number): Label {
  if (t.guard !== undefined) {
    const text = guardText(t.guard);
    return text === "(inline)" ? INLINE : code(text);
  }
  return list.slice(0, index).some((earlier) => earlier.guard !== undefined) ? word("otherwise") : NONE;
}

function actionLabel(action: unknown): Label {
  const named = referenceText(action);
  return named === null ? INLINE : code(named);
}

function eventLabel(t: AnyTransition): Label {
  if (t.eventType === "") return word("always");
  if (t.delay !== undefined) return word(typeof t.delay === "number" ? `after ${t.delay} ms` : `after ${t.delay}`);
  return code(t.eventType);
}

/** The delayed-event timers XState adds to the entry and exit of a state with `after` transitions. */
function isAfterTimer(action: unknown): boolean {
  if (typeof action !== "function") return false;
  const { type, id, sendId } = action as { type?: unknown; id?: unknown; sendId?: unknown };
  const timer = (ref: unknown) => typeof ref === "string" && ref.startsWith("xstate.after.");
  return (type === "xstate.raise" && timer(id)) || (type === "xstate.cancel" && timer(sendId));
}

const ownActions = (actions: readonly unknown[]) => actions.filter((a) => !isAfterTimer(a));

export function transitionRows(machine: AnyStateMachine): TransitionRow[] {
  return transitionLists(machine).flatMap(({ node, transitions }) =>
    transitions.map((t, index) => ({
      from: pathOf(node),
      event: eventLabel(t),
      guard: guardLabel(t, transitions, index),
      to: (t.target ?? []).map(pathOf),
      actions: t.actions.map(actionLabel),
    })),
  );
}

export function entryExitRows(machine: AnyStateMachine): EntryExitRow[] {
  return stateNodesInOrder(machine)
    .map((node: AnyStateNode) => ({
      state: pathOf(node),
      entry: ownActions(node.entry).map(actionLabel),
      exit: ownActions(node.exit).map(actionLabel),
    }))
    .filter((row) => row.entry.length > 0 || row.exit.length > 0);
}

/** Every named action (transitions, entry, exit) and every named guard, once each, in table order. */
export function namedReferences(machine: AnyStateMachine): { actions: string[]; guards: string[] } {
  const actions = new Set<string>();
  const guards = new Set<string>();
  const addGuard = (guard: unknown) => {
    if (referenceText(guard) !== null) guards.add(nameOf(guard));
    const inner = (guard as { guards?: unknown } | null)?.guards;
    if (typeof guard === "function" && Array.isArray(inner)) inner.forEach(addGuard);
  };
  const addAction = (action: unknown) => {
    if (referenceText(action) !== null) actions.add(nameOf(action));
  };
  for (const { transitions } of transitionLists(machine))
    for (const t of transitions) {
      if (t.guard !== undefined) addGuard(t.guard);
      t.actions.forEach(addAction);
    }
  for (const node of stateNodesInOrder(machine)) {
    ownActions(node.entry).forEach(addAction);
    ownActions(node.exit).forEach(addAction);
  }
  return { actions: [...actions], guards: [...guards] };
}

/** A code span that survives backticks in its text, with `|` escaped for a table cell. */
function cell(labels: readonly Label[]): string {
  if (labels.length === 0) return NONE.text;
  return labels
    .map(({ text, code: isCode }) => {
      const flat = text.replace(/\s*\n\s*/g, " ");
      if (!isCode) return flat.replace(/\|/g, "\\|");
      const fence = "`".repeat(Math.max(0, ...[...flat.matchAll(/`+/g)].map((m) => m[0].length)) + 1);
      const pad = flat.startsWith("`") || flat.endsWith("`") ? " " : "";
      return `${fence}${pad}${flat.replace(/\|/g, "\\|")}${pad}${fence}`;
    })
    .join(", ");
}

const tableLine = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;

/** The transitions table, then the entry/exit table (or a line saying there is none), as Markdown. */
export function renderTransitionTable(machine: AnyStateMachine): string {
  const lines = [tableLine(["From", "Event", "Guard", "To", "Actions"]), tableLine(Array(5).fill("---"))];
  for (const row of transitionRows(machine)) {
    const to = row.to.length === 0 ? [word("unchanged")] : row.to;
    lines.push(tableLine([cell([row.from]), cell([row.event]), cell([row.guard]), cell(to), cell(row.actions)]));
  }
  lines.push("");
  const entryExit = entryExitRows(machine);
  if (entryExit.length === 0) lines.push("No state has entry or exit actions.");
  else {
    lines.push(tableLine(["State", "Entry", "Exit"]), tableLine(Array(3).fill("---")));
    for (const row of entryExit) lines.push(tableLine([cell([row.state]), cell(row.entry), cell(row.exit)]));
  }
  return lines.join("\n") + "\n";
}
