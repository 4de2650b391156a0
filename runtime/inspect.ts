// The three commands that let a person see the state and its history: /state-flow-show,
// /state-flow-history and /state-flow-diff. Each reads its arguments (every bad one is refused by
// name, with what to type instead), finds the boundaries (runtime/boundaries.ts) and renders them
// (state-views.ts, history.ts). Queries of the cached runtime like /state-flow-status: no machine
// event, no publication; only an older boundary is read back from Git, as read_state would.

import type { JsonObject } from "../storage/core/json.ts";
import { SCOPES, type ScopeSelector } from "../storage/core/scope-state.ts";
import { HOT_OFFSETS } from "../storage/core/temporal.ts";
import type { BranchState, StateStore } from "../storage/state-store.ts";
import type { ProjectionMode } from "../machines/episode-queries.ts";
import {
  coldBoundaries,
  hotBoundaries,
  joinBoundaries,
  shortId,
  stateOf,
  type BoundaryRecord,
  type ColdRead,
  type RecordedRevision,
} from "./boundaries.ts";
import { PAGE_SIZE, renderHistory, when } from "./history.ts";
import { count, diffLines, diffValues, lookupPath, stateTree, wholeValue, type ShowHint } from "./state-views.ts";

export interface InspectSource {
  mode: ProjectionMode;
  state: BranchState | null;
  store: StateStore | null;
  /** The revisions the selected branch recorded, oldest first. */
  recorded: readonly RecordedRevision[];
  /** Why the branch's state could not be proven (failed closed), if so. */
  unavailable: string | null;
}

export interface InspectAnswer {
  text: string;
  /** The command was refused (a bad argument, or nothing to show): the host shows it as a warning. */
  refused: boolean;
}

const SCOPE_NAMES: readonly string[] = ["effective", ...SCOPES];
const OFFSET = /^\d+$/;
/** A transition (t-…) or lineage origin (l-…) id or its prefix, or bare hex digits (read as a transition's). */
const ID = /^(?:[tl]-)?[0-9a-f][0-9a-f-]*$/i;
const MIN_ID_DIGITS = 6;

class Refusal extends Error {}

const refuse = (text: string): never => {
  throw new Refusal(text);
};

async function answer(work: () => Promise<string>): Promise<InspectAnswer> {
  try {
    return { text: await work(), refused: false };
  } catch (error) {
    if (error instanceof Refusal) return { text: error.message, refused: true };
    throw error;
  }
}

/** The branch's state, or the refusal saying why there is none and how to get one. */
function branchState(source: InspectSource): { state: BranchState; note: string | null } {
  if (source.mode === "failedClosed") {
    refuse(
      `State Flow is unavailable on this branch: its state could not be proven (${
        source.unavailable ?? "see " + "/state-flow-status"
      }), so none is shown. /state-flow-status says what to do.`,
    );
  }
  const state = source.state;
  if (!state && source.mode === "passive") {
    refuse("State Flow is stopped on this branch and this session holds no state for it: /state-flow-start resumes.");
  }
  if (!state) {
    refuse(
      "State Flow is off on this branch (never started here): there is no state to show. " +
        "/state-flow-start turns it on.",
    );
  }
  const note =
    source.mode === "passive"
      ? "State Flow is stopped on this branch: this is the state kept at the stop (/state-flow-start resumes)."
      : null;
  return { state: state!, note };
}

function usage(command: "show" | "history" | "diff"): string {
  switch (command) {
    case "show":
      return (
        "/state-flow-show [effective|global|cwd|session] [offset 0–7 or transition id] [path], e.g. " +
        "/state-flow-show session 0 working"
      );
    case "history":
      return "/state-flow-history [effective|global|cwd|session] [--all] [--page N]";
    default:
      return (
        "/state-flow-diff <a> <b> [effective|global|cwd|session], a and b offsets 0–7 or transition ids, " +
        "e.g. /state-flow-diff 1 0 session"
      );
  }
}

const isBoundaryRef = (token: string): boolean => OFFSET.test(token) || (ID.test(token) && /[a-f-]/i.test(token));

/** Finds boundaries by offset or id; older ones are read from Git once, only when asked for. */
class Boundaries {
  readonly hot: BoundaryRecord[];
  private readonly source: InspectSource;

  constructor(source: InspectSource, state: BranchState) {
    this.source = source;
    this.hot = hotBoundaries(state.view);
  }

  get git(): boolean {
    return this.source.store?.store.kind === "git";
  }

  /** Hot and older boundaries, newest first, reading revisions until `enough` holds (Git only). */
  async read(enough: (records: readonly BoundaryRecord[]) => boolean): Promise<ColdRead> {
    if (!this.git || !this.source.store) return { records: [], ended: null, complete: false };
    return coldBoundaries(this.source.store, this.source.recorded, enough);
  }

  async resolve(token: string): Promise<BoundaryRecord> {
    // (six digits or more are an id's prefix that happens to hold no letter: offsets end at 7)
    if (OFFSET.test(token) && token.length < MIN_ID_DIGITS) {
      const offset = Number(token);
      if (offset >= HOT_OFFSETS) {
        refuse(
          `Offset ${token} is outside the hot window (offsets 0–7): name an older boundary by its transition id ` +
            "instead, as /state-flow-history --all lists them.",
        );
      }
      const record = this.hot[offset];
      if (!record) {
        refuse(
          `Offset ${token} does not exist yet on this branch: only offsets 0–${this.hot.length - 1} do ` +
            "(/state-flow-history lists them).",
        );
      }
      return record!;
    }
    const digits = token.replace(/^[tl]-/i, "");
    if (!ID.test(token) || digits.replace(/-/g, "").length < MIN_ID_DIGITS) {
      refuse(
        `${JSON.stringify(token)} is not an offset or a transition id: give an offset 0–7 or at least ` +
          `${MIN_ID_DIGITS} hex digits of a transition id (e.g. ${shortId(this.hot[0]!.id)}, as /state-flow-history ` +
          "prints them).",
      );
    }
    const matches = (r: BoundaryRecord) =>
      r.id
        .toLowerCase()
        .replace(/^[tl]-/, "")
        .startsWith(digits.toLowerCase());
    let found = this.hot.filter(matches);
    if (found.length === 0 && this.git) {
      const cold = await this.read((records) => records.some(matches));
      found = cold.records.filter(matches);
    }
    if (found.length > 1) {
      refuse(
        `${token} names ${found.length} boundaries (${found.map((r) => shortId(r.id)).join(", ")}): give more digits.`,
      );
    }
    if (found.length === 0) {
      const where = this.git
        ? "in the hot window nor among the revisions this branch recorded"
        : "in the hot window, and this store is file-only: it keeps the last eight boundaries, no older ones";
      refuse(`No boundary ${token} ${where}. /state-flow-history${this.git ? " --all" : ""} lists the ids there are.`);
    }
    return found[0]!;
  }
}

/** What a boundary is called in a command: its offset while hot, else its short id. */
function reference(record: BoundaryRecord): string {
  return record.offset === null ? shortId(record.id) : String(record.offset);
}

function where(record: BoundaryRecord): string {
  return record.offset === null ? shortId(record.id) : `offset ${record.offset}`;
}

function describe(record: BoundaryRecord): string {
  const offset = record.offset === null ? "older than the hot window" : `offset ${record.offset}`;
  const origin = record.id === record.lineage ? ", where State Flow started this line of history" : "";
  const at = record.at ? `, recorded ${when(record.at)} UTC` : "";
  return `${offset} — step ${record.step} (${shortId(record.id)}${origin}${at})`;
}

function scopeOf(tokens: string[]): ScopeSelector {
  const index = tokens.findIndex((t) => SCOPE_NAMES.includes(t));
  if (index < 0) return "effective";
  return tokens.splice(index, 1)[0] as ScopeSelector;
}

function hintFor(scope: ScopeSelector, record: BoundaryRecord): ShowHint {
  return (path) => `/state-flow-show ${scope} ${reference(record)}${path ? ` ${path}` : ""}`;
}

export function show(source: InspectSource, args: string): Promise<InspectAnswer> {
  return answer(async () => {
    const { state, note } = branchState(source);
    const tokens = args.trim().split(/\s+/).filter(Boolean);
    let scope: ScopeSelector = "effective";
    if (tokens[0] !== undefined && SCOPE_NAMES.includes(tokens[0])) scope = tokens.shift() as ScopeSelector;
    const boundaries = new Boundaries(source, state);
    const record =
      tokens[0] !== undefined && isBoundaryRef(tokens[0])
        ? await boundaries.resolve(tokens.shift()!)
        : boundaries.hot[0]!;
    const path = tokens.join(" ");
    const value = stateOf(record, scope) as unknown as JsonObject;
    const lines = [`State Flow state — scope ${scope}, ${describe(record)}`];
    if (note) lines.push(note);
    const hint = hintFor(scope, record);
    if (!path) return [...lines, ...stateTree(value, hint)].join("\n");
    const found = lookupPath(value, path);
    if (!found.found && found.at.length === 0) {
      const top = JSON.stringify(path.split(/[ .]/)[0]);
      return refuse(
        `${top} is not a scope, an offset 0–7, a transition id or a field of the state. Scopes: ` +
          `${SCOPE_NAMES.join(", ")}; fields: ${found.available.join(", ")}. Usage: ${usage("show")}`,
      );
    }
    if (!found.found) {
      const at = found.at.join(".");
      return refuse(
        `No value at ${JSON.stringify(path)} in the ${scope} state at ${where(record)}: ${at} holds ` +
          `${found.available.slice(0, 12).join(", ") || "nothing"}${found.available.length > 12 ? ", …" : ""}. ` +
          `${hint(at)} shows what is there.`,
      );
    }
    const whole = wholeValue(found.value);
    const size = `${count(whole.length)} char${whole.length === 1 ? "" : "s"}`;
    return [...lines, `${path} — ${size}:`, whole].join("\n");
  });
}

/** Parses `[scope] [--all] [--page N]`. */
function historyArgs(args: string): { scope: ScopeSelector; page: number | null } {
  const tokens = args.trim().split(/\s+/).filter(Boolean);
  const scope = scopeOf(tokens);
  let all = false;
  let page: number | null = null;
  while (tokens.length > 0) {
    const token = tokens.shift()!;
    if (token === "--all") all = true;
    else if (token === "--page") {
      const n = tokens.shift();
      if (n === undefined || !/^[1-9]\d*$/.test(n)) {
        refuse(
          `--page needs a page number 1, 2, …, not ${n === undefined ? "nothing" : JSON.stringify(n)}: ` +
            "e.g. /state-flow-history --all --page 1",
        );
      }
      page = Number(n);
    } else {
      refuse(`/state-flow-history does not know ${JSON.stringify(token)}: ${usage("history")}`);
    }
  }
  return { scope, page: all || page !== null ? (page ?? 1) : null };
}

/** A fork's origin line: which session's state it began as a copy of, and at which step. */
function forkOrigin(state: BranchState): string | null {
  const fork = state.meta?.fork;
  return fork
    ? `forked from session ${fork.sessionKey} at its step ${fork.boundary.step} (its own copy of that state)`
    : null;
}

export function history(source: InspectSource, args: string): Promise<InspectAnswer> {
  return answer(async () => {
    const { scope, page } = historyArgs(args);
    const { state, note } = branchState(source);
    const boundaries = new Boundaries(source, state);
    const hot = boundaries.hot;
    const first = page === null ? 0 : (page - 1) * PAGE_SIZE;
    const size = page === null ? hot.length : PAGE_SIZE;
    // One boundary more than listed: the oldest line listed differs against it, and it says whether there is more.
    const cold = await boundaries.read((records) => records.length >= first + size + 1);
    const records = joinBoundaries(hot, cold.records);
    if (first >= records.length) {
      const pages = Math.ceil(records.length / PAGE_SIZE);
      refuse(
        `No page ${page}: this branch's history has ${records.length} boundaries, ${pages} page(s) of ` +
          `${PAGE_SIZE}. /state-flow-history ${scope} --all --page ${pages} shows the last.`,
      );
    }
    const listed = records.slice(first, first + size);
    const older = records[first + size] ?? null;
    const more = page !== null && older !== null;
    const text = renderHistory({
      scope,
      title: page === null ? `the hot window (offsets 0–${hot.length - 1})` : `every boundary read, page ${page}`,
      records: listed,
      older,
      end: more
        ? `… older: /state-flow-history ${scope} --all --page ${page + 1}`
        : endOfHistory(boundaries, cold, listed[listed.length - 1]!, page !== null, state.meta?.fork),
      oldestNote: boundaries.git
        ? cold.ended
          ? "changes not shown: the boundary before it could not be read (below)"
          : "changes not shown: the boundary before it is older than the hot window (--all reads it from Git)"
        : "changes not shown: the boundary before it is no longer kept (file-only store)",
      ...(forkOrigin(state) ? { originNote: forkOrigin(state)! } : {}),
    });
    if (!note) return text;
    const [title, ...rest] = text.split("\n");
    return [title, note, ...rest].join("\n");
  });
}

/** Where the history shown ends, and why: never silence where something older exists but was not read. */
function endOfHistory(
  boundaries: Boundaries,
  cold: ColdRead,
  oldest: BoundaryRecord,
  all: boolean,
  fork: BranchState["meta"]["fork"],
): string {
  if (oldest.id === oldest.lineage && fork) {
    return (
      `History starts at step ${oldest.step}: this session was forked there from session ${fork.sessionKey}, ` +
      "whose history before it is that session's (/state-flow-history in it shows it)."
    );
  }
  if (oldest.id === oldest.lineage) {
    return `History starts at step ${oldest.step}: State Flow started this line of history there.`;
  }
  if (!boundaries.git) {
    return (
      `History shown ends at step ${oldest.step}: this store is file-only, and file-only stores keep the ` +
      `last ${HOT_OFFSETS} boundaries, not older ones. With git installed, /state-flow-start adopts the store ` +
      "into Git, which keeps every boundary from then on. (Nor can a file-only store say when each was recorded.)"
    );
  }
  if (cold.ended) return `Older history cannot be read: ${cold.ended}.`;
  if (!all) return `Older boundaries: /state-flow-history ${"--all"} reads them from Git (${PAGE_SIZE} per page).`;
  if (cold.complete) return `That is the oldest boundary this branch recorded (step ${oldest.step}).`;
  return `Older boundaries: see the next page.`;
}

export function diff(source: InspectSource, args: string): Promise<InspectAnswer> {
  return answer(async () => {
    const tokens = args.trim().split(/\s+/).filter(Boolean);
    const scope = scopeOf(tokens);
    if (tokens.length !== 2) {
      const got = tokens.length === 0 ? "none" : tokens.map((t) => JSON.stringify(t)).join(" ");
      refuse(`/state-flow-diff needs two boundaries, got ${got}: ${usage("diff")}`);
    }
    const { state, note } = branchState(source);
    const boundaries = new Boundaries(source, state);
    const a = await boundaries.resolve(tokens[0]!);
    const b = await boundaries.resolve(tokens[1]!);
    const entries = diffValues(stateOf(a, scope) as unknown as JsonObject, stateOf(b, scope) as unknown as JsonObject);
    const lines = [`State Flow diff — scope ${scope}`, `from ${describe(a)}`, `to   ${describe(b)}`];
    if (note) lines.push(note);
    lines.push(...diffLines(entries, hintFor(scope, a), hintFor(scope, b)));
    return lines.join("\n");
  });
}

/** Where /state-flow-fork forks from: the boundary an offset or transition id names (or why it cannot). */
export type ForkTarget = { boundary: { id: string; step: number } } | { refusal: string };

/**
 * /state-flow-fork's argument: one boundary of an enabled branch. A stopped branch is refused (its fork
 * would stay off: Pi's /fork does that), as is one State Flow is not on.
 */
export async function forkTarget(source: InspectSource, args: string): Promise<ForkTarget> {
  const tokens = args.trim().split(/\s+/).filter(Boolean);
  const answered = await answer(async () => {
    if (tokens.length !== 1) {
      const got = tokens.length === 0 ? "none" : tokens.map((t) => JSON.stringify(t)).join(" ");
      refuse(
        `/state-flow-fork needs one boundary, got ${got}: /state-flow-fork <offset 0–7 or transition id>, e.g. ` +
          "/state-flow-fork 2 (/state-flow-history lists them).",
      );
    }
    if (source.mode === "passive") {
      refuse(
        "State Flow is stopped on this branch, and a fork of a stopped branch stays off: Pi's /fork makes one. " +
          "/state-flow-start first to fork with State Flow on.",
      );
    }
    const { state } = branchState(source);
    const record = await new Boundaries(source, state).resolve(tokens[0]!);
    return JSON.stringify({ id: record.id, step: record.step });
  });
  return answered.refused ? { refusal: answered.text } : { boundary: JSON.parse(answered.text) };
}

/** The three commands by name, for the runtime's one query method. */
export const INSPECT_COMMANDS = { show, history, diff } as const;
export type InspectCommand = keyof typeof INSPECT_COMMANDS;
