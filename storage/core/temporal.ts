// Temporal algebra: anchored scope streams (checkpoint + at most seven patch records), the
// active lineage that gives offsets 0–7 one shared meaning across scopes, folding, and lazy
// historical reads (`readTemporalState`).
//
// Model. A transition has an opaque `id`, its `parent` boundary and a branch-local `step`
// (parent step + 1) that orders parent-linked identities; it never replaces identity. A lineage
// starts at a proven origin boundary whose step is at least every step it inherited, so records
// of shared (global/cwd) scopes written by other lineages before the origin sort before it.
// state[n] resolves ONE boundary of the lineage (the n-th newest) and every scope is
// reconstructed at that boundary: a scope holds checkpoint.state plus its records whose step is
// at or before the boundary's step. A scope untouched by a transition simply has no record.

import { StateFlowError } from "./errors.ts";
import { applyJsonPatch, cloneJson, diffFields, hashJson, type JsonObject } from "./json.ts";
import {
  inStoredOrder,
  SCOPES,
  applyScopePatch,
  emptyScopeState,
  overlayScopes,
  type ScopeName,
  type ScopePatch,
  type ScopeSelector,
  type ScopeState,
} from "./scope-state.ts";

/** Offsets 0..7 are the hot read contract. */
export const HOT_OFFSETS = 8;
/** At most seven scope-local records follow a checkpoint. */
export const MAX_TAIL = 7;

/** The boundary every never-written scope is anchored at. */
const GENESIS = Object.freeze({ lineage: "genesis", id: "genesis", step: 0 });

/** The state right after a transition (or at a lineage origin), in some lineage. */
export interface Boundary {
  lineage: string;
  id: string;
  step: number;
}

export interface TransitionRef {
  id: string;
  parent: string;
  step: number;
}

export interface Lineage {
  /** Lineage identity; equal to its origin boundary id. */
  id: string;
  /** The proven origin: nothing before it is readable through this lineage. */
  originStep: number;
  /** The newest transitions, oldest first, at most eight, parent-linked. */
  window: TransitionRef[];
}

export interface Checkpoint {
  through: Boundary;
  state: ScopeState;
  hash: string;
}

export interface PatchRecord {
  lineage: string;
  id: string;
  parent: string;
  step: number;
  patch: ScopePatch;
  /** Semantic hash of the scope state after this record. */
  hash: string;
  /**
   * The id this record was appended after in its scope's stream (the record before it, or the
   * checkpoint's boundary): a tail is one chain, so two histories joined by hand are named, whatever
   * their steps. Absent in records older versions wrote.
   */
  follows?: string;
}

export interface ScopeStream {
  scope: ScopeName;
  checkpoint: Checkpoint;
  tail: PatchRecord[];
}

export interface TemporalView {
  lineage: Lineage;
  streams: Record<ScopeName, ScopeStream>;
  /** Materialized current state per scope (a cache; derived from streams). */
  current: Record<ScopeName, ScopeState>;
}

export interface TemporalRead {
  offset: number;
  scope: ScopeSelector;
  boundary: Boundary;
  state: ScopeState;
}

export function emptyStream(scope: ScopeName): ScopeStream {
  const state = emptyScopeState();
  return {
    scope,
    checkpoint: { through: { ...GENESIS }, state, hash: hashJson(state as unknown as JsonObject) },
    tail: [],
  };
}

function streamMaxStep(stream: ScopeStream): number {
  const last = stream.tail[stream.tail.length - 1];
  return last ? last.step : stream.checkpoint.through.step;
}

/** A stream's current state (its checkpoint with every retained record applied). */
export function streamState(stream: ScopeStream): ScopeState {
  return materializeStream(stream);
}

/** Replays a stream up to (and including) `step`. */
function materializeStream(stream: ScopeStream, step = Number.POSITIVE_INFINITY): ScopeState {
  if (stream.checkpoint.through.step > step) {
    throw new StateFlowError(
      "offset-unavailable",
      `the ${stream.scope} checkpoint is anchored after step ${step}; that boundary is not retained`,
    );
  }
  // Records were validated when accepted or parsed, so replay applies them without re-validating.
  let state = stream.checkpoint.state as unknown as JsonObject;
  for (const record of stream.tail) {
    if (record.step > step) break;
    state = applyJsonPatch(state, record.patch as unknown as JsonObject) as JsonObject;
  }
  // (in the store's key order, as an accepted transition leaves it: a replay adds keys in record order)
  return inStoredOrder(state as unknown as ScopeState);
}

export function headBoundary(lineage: Lineage): Boundary {
  const head = lineage.window[lineage.window.length - 1];
  return head
    ? { lineage: lineage.id, id: head.id, step: head.step }
    : { lineage: lineage.id, id: lineage.id, step: lineage.originStep };
}

/** How many offsets (0..n-1) this lineage can resolve: at most eight, never before the origin. */
export function availableOffsets(lineage: Lineage): number {
  return Math.min(HOT_OFFSETS, headBoundary(lineage).step - lineage.originStep + 1);
}

/** Resolves the shared temporal target of state[offset]. */
function boundaryAt(lineage: Lineage, offset: number): Boundary {
  if (!Number.isInteger(offset) || offset < 0 || offset >= HOT_OFFSETS) {
    throw new StateFlowError(
      "offset-out-of-contract",
      `offset ${String(offset)} is outside the hot read contract: ` +
        `use an integer 0–7 (older history is explicit Git inspection)`,
      "offset",
    );
  }
  const available = availableOffsets(lineage);
  if (offset >= available) {
    throw new StateFlowError(
      "offset-unavailable",
      `offset ${offset} is before this lineage's proven origin: only offsets 0–${available - 1} exist yet`,
      "offset",
    );
  }
  const index = lineage.window.length - 1 - offset;
  const ref = lineage.window[index];
  return ref
    ? { lineage: lineage.id, id: ref.id, step: ref.step }
    : { lineage: lineage.id, id: lineage.id, step: lineage.originStep };
}

/**
 * Checks a lineage's own structure: window bounded, parent-linked, consecutive steps, anchored at the origin
 * when short.
 */
export function assertLineage(lineage: Lineage, path = "lineage"): void {
  const fail = (message: string): never => {
    throw new StateFlowError("invalid-lineage", message, path);
  };
  if (typeof lineage.id !== "string" || lineage.id.length === 0) fail("lineage id must be a non-empty string");
  if (!Number.isInteger(lineage.originStep) || lineage.originStep < 0)
    fail("originStep must be a non-negative integer");
  if (lineage.window.length > HOT_OFFSETS)
    fail(`window holds ${lineage.window.length} transitions; at most ${HOT_OFFSETS} are retained`);
  const ids = new Set<string>([lineage.id]);
  lineage.window.forEach((ref, i) => {
    if (ids.has(ref.id)) fail(`transition id ${ref.id} repeats`);
    ids.add(ref.id);
    const prev = lineage.window[i - 1];
    if (prev && (ref.parent !== prev.id || ref.step !== prev.step + 1)) {
      fail(`window[${i}] (${ref.id}) is not the child of window[${i - 1}] (${prev.id})`);
    }
  });
  const first = lineage.window[0];
  if (!first) return;
  if (first.step <= lineage.originStep)
    fail(`window[0] step ${first.step} is not after the origin step ${lineage.originStep}`);
  const reachesOrigin = first.step === lineage.originStep + 1;
  if (reachesOrigin && first.parent !== lineage.id)
    fail(`window[0] (${first.id}) must descend from the origin ${lineage.id}`);
  if (!reachesOrigin && lineage.window.length < HOT_OFFSETS) {
    fail(
      `window holds ${lineage.window.length} transitions but ` +
        `${first.step - lineage.originStep - 1} more since the origin are missing`,
    );
  }
}

/**
 * Checks that a stream can be read through a lineage: records of this lineage match its window
 * and never pass its head; records and checkpoints of other lineages predate its origin.
 */
export function assertStreamInLineage(stream: ScopeStream, lineage: Lineage): void {
  const head = headBoundary(lineage);
  const windowByStep = new Map(lineage.window.map((ref) => [ref.step, ref]));
  const oldestWindowStep = lineage.window[0]?.step ?? head.step + 1;
  const check = (b: Boundary, what: string): void => {
    const fail = (message: string): never => {
      throw new StateFlowError("invalid-lineage", `${what} ${message}`, stream.scope);
    };
    if (b.lineage !== lineage.id) {
      if (b.step > lineage.originStep) {
        fail(
          `belongs to lineage ${b.lineage} and follows this lineage's origin ` +
            `(step ${b.step} > ${lineage.originStep}); adopt it at a fresh origin`,
        );
      }
      return;
    }
    if (b.id === lineage.id && b.step === lineage.originStep) return;
    if (b.step <= lineage.originStep) fail(`claims this lineage at step ${b.step}, at or before its origin`);
    if (b.step > head.step) fail(`is at step ${b.step}, after this lineage's head (step ${head.step})`);
    if (b.step >= oldestWindowStep && windowByStep.get(b.step)?.id !== b.id) {
      fail(`(${b.id} at step ${b.step}) is not the transition this lineage holds at that step`);
    }
  };
  check(stream.checkpoint.through, "checkpoint");
  for (const record of stream.tail) check(record, `record ${record.id}`);
}

function assertViewConsistent(view: TemporalView): void {
  assertLineage(view.lineage);
  for (const scope of SCOPES) assertStreamInLineage(view.streams[scope], view.lineage);
}

/** Builds a view from streams whose lineage metadata is already known (e.g. loaded from meta). */
export function createView(lineage: Lineage, streams: Record<ScopeName, ScopeStream>): TemporalView {
  const view: TemporalView = {
    lineage,
    streams,
    current: {
      global: materializeStream(streams.global),
      cwd: materializeStream(streams.cwd),
      session: materializeStream(streams.session),
    },
  };
  assertViewConsistent(view);
  return view;
}

/**
 * Starts a new lineage at a fresh proven origin over existing streams: the origin step is at
 * least every step it inherits, so inherited records read as pre-origin history.
 */
export function originateView(
  lineageId: string,
  streams: Record<ScopeName, ScopeStream> = {
    global: emptyStream("global"),
    cwd: emptyStream("cwd"),
    session: emptyStream("session"),
  },
  minimumStep = 0,
): TemporalView {
  const originStep = Math.max(minimumStep, ...SCOPES.map((s) => streamMaxStep(streams[s])));
  return createView({ id: lineageId, originStep, window: [] }, streams);
}

/** Appends one record to a stream (after its newest), folding the oldest into the checkpoint on the eighth. */
function appendRecord(stream: ScopeStream, record: PatchRecord): ScopeStream {
  const follows = (stream.tail[stream.tail.length - 1] ?? stream.checkpoint.through).id;
  const tail = [...stream.tail, { ...record, follows }];
  let checkpoint = stream.checkpoint;
  while (tail.length > MAX_TAIL) {
    const oldest = tail.shift()!;
    checkpoint = {
      through: { lineage: oldest.lineage, id: oldest.id, step: oldest.step },
      state: applyJsonPatch(
        checkpoint.state as unknown as JsonObject,
        oldest.patch as unknown as JsonObject,
      ) as unknown as ScopeState,
      hash: oldest.hash,
    };
  }
  return { scope: stream.scope, checkpoint, tail };
}

export interface TransitionResult {
  view: TemporalView;
  transition: TransitionRef;
  /** The records written, only for scopes that materially changed. */
  records: Partial<Record<ScopeName, PatchRecord>>;
  /** Scopes that were supplied but did not change (they get no record). */
  unchanged: ScopeName[];
}

/**
 * Applies validated per-scope patches as ONE transition shared by every changed scope.
 * Records carry the effective patch (what actually changed), never a no-op member.
 * Throws `no-op-cohort` when nothing changes; the input view is left untouched.
 */
export function applyTransition(
  view: TemporalView,
  patches: Partial<Record<ScopeName, ScopePatch>>,
  transitionId: string,
): TransitionResult {
  const head = headBoundary(view.lineage);
  const transition: TransitionRef = { id: transitionId, parent: head.id, step: head.step + 1 };
  const streams = { ...view.streams };
  const current = { ...view.current };
  const records: Partial<Record<ScopeName, PatchRecord>> = {};
  const unchanged: ScopeName[] = [];
  for (const scope of SCOPES) {
    const patch = patches[scope];
    if (!patch) continue;
    const before = view.current[scope];
    const after = applyScopePatch(before, patch, scope);
    const effective = diffFields(before as unknown as JsonObject, after as unknown as JsonObject);
    if (!effective) {
      unchanged.push(scope);
      continue;
    }
    const record: PatchRecord = {
      lineage: view.lineage.id,
      id: transition.id,
      parent: transition.parent,
      step: transition.step,
      patch: effective as ScopePatch,
      hash: hashJson(after as unknown as JsonObject),
    };
    records[scope] = record;
    streams[scope] = appendRecord(view.streams[scope], record);
    current[scope] = after;
  }
  if (Object.keys(records).length === 0) {
    throw new StateFlowError(
      "no-op-cohort",
      "this patch changes nothing; omit unchanged scopes and send " +
        '{"final":true} alone when no semantic update is needed',
    );
  }
  const window = [...view.lineage.window, transition].slice(-HOT_OFFSETS);
  return {
    view: { lineage: { ...view.lineage, window }, streams, current },
    transition,
    records,
    unchanged,
  };
}

/** Materializes one scope (or the effective overlay) at one shared boundary. */
function stateAt(view: TemporalView, boundary: Boundary, scope: ScopeSelector, offset: number): ScopeState {
  const scopeState = (s: ScopeName): ScopeState =>
    offset === 0 ? view.current[s] : materializeStream(view.streams[s], boundary.step);
  if (scope !== "effective") return scopeState(scope);
  return overlayScopes(scopeState("global"), scopeState("cwd"), scopeState("session"));
}

/**
 * Lazy historical read: state[offset] of one scope or of the effective overlay, resolved at the
 * same lineage boundary for every scope. Returns a detached copy.
 */
export function readTemporalState(view: TemporalView, offset = 0, scope: ScopeSelector = "effective"): TemporalRead {
  if (scope !== "effective" && !(SCOPES as readonly string[]).includes(scope)) {
    throw new StateFlowError(
      "offset-out-of-contract",
      `unknown scope ${JSON.stringify(scope)}; use effective, global, cwd or session`,
      "scope",
    );
  }
  const boundary = boundaryAt(view.lineage, offset);
  const state = stateAt(view, boundary, scope, offset);
  return { offset, scope, boundary, state: cloneJson(state as unknown as JsonObject) as unknown as ScopeState };
}

export interface CompactTransition {
  id: string;
  step: number;
  /** Changed paths per scope, e.g. `working.next`; empty when that scope's record has folded away. */
  changes: Partial<Record<ScopeName, string[]>>;
}

function changedPaths(patch: JsonObject, prefix = ""): string[] {
  const paths: string[] = [];
  for (const key of Object.keys(patch)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const value = patch[key];
    const nested = typeof value === "object" && value !== null && !Array.isArray(value) && prefix.split(".").length < 2;
    if (nested && Object.keys(value).length > 0) paths.push(...changedPaths(value as JsonObject, path));
    else paths.push(value === null ? `-${path}` : path);
  }
  return paths;
}

/**
 * Compact context for the model: the newest transitions of the active lineage (at most seven),
 * newest first, with the changed paths (two levels deep) of each scope they touched.
 */
export function recentTransitions(view: TemporalView, limit = MAX_TAIL): CompactTransition[] {
  const byId = new Map<string, CompactTransition>();
  const ordered = [...view.lineage.window]
    .reverse()
    .slice(0, limit)
    .map((ref) => {
      const entry: CompactTransition = { id: ref.id, step: ref.step, changes: {} };
      byId.set(ref.id, entry);
      return entry;
    });
  for (const scope of SCOPES) {
    for (const record of view.streams[scope].tail) {
      const entry = record.lineage === view.lineage.id ? byId.get(record.id) : undefined;
      if (entry) entry.changes[scope] = changedPaths(record.patch as unknown as JsonObject);
    }
  }
  return ordered;
}
