// Model-based testing utilities over xstate/graph: transition listing (each guarded branch
// separately), path generation (shortest, simple, and one edge tour per adjacency edge), replay
// through a live actor with transition coverage collected from inspect microstep events.
// Pure: no fs/git/Pi. Used by tests and by the diagram and transition-table generators.
import {
  createActor,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyEventObject,
  type AnyMachineSnapshot,
} from "xstate";
import { getAdjacencyMap, getShortestPaths, getSimplePaths, getStateNodes } from "xstate/graph";

/** The parts of an XState transition definition the graph utilities and the doc generators read. */
export type AnyTransition = {
  source: { id: string };
  eventType: string;
  guard?: unknown;
  target?: ReadonlyArray<{ id: string; path: readonly string[] }> | undefined;
  actions: readonly unknown[];
  /** Set on `after` transitions: the delay in ms or the name of a configured delay. */
  delay?: number | string;
};

export interface TransitionInfo {
  key: string;
  source: string;
  event: string;
  guard: string | null;
  targets: string[];
  actions: string[];
}

export function nameOf(x: unknown): string {
  if (typeof x === "string") return x;
  if (x && typeof x === "object" && "type" in x && typeof (x as { type: unknown }).type === "string")
    return (x as { type: string }).type;
  if (typeof x === "function") return x.name || "anonymous";
  return "unknown";
}

export function describeTransition(t: AnyTransition): TransitionInfo {
  const source = t.source.id;
  const event = t.eventType === "" ? "always" : t.eventType;
  const guard = t.guard === undefined ? null : nameOf(t.guard);
  const targets = (t.target ?? []).map((n) => n.id);
  const actions = t.actions.map(nameOf).filter((n) => !n.startsWith("xstate."));
  const key = `${source} --${event}${guard ? ` [${guard}]` : ""}--> ${targets.length ? targets.join(",") : "(self)"}`;
  return { key, source, event, guard, targets, actions };
}

/** The root and every state node below it, in document order (pre-order, as configured). */
export function stateNodesInOrder(machine: AnyStateMachine): AnyStateNode[] {
  return [machine.root, ...getStateNodes(machine.root)];
}

/**
 * The transition lists of every state node in document order: per node, one list per event (in
 * configuration order, `after` included), then its `always` list. A list's order is the order
 * XState tries its guarded branches in.
 */
export function transitionLists(machine: AnyStateMachine): Array<{ node: AnyStateNode; transitions: AnyTransition[] }> {
  const out: Array<{ node: AnyStateNode; transitions: AnyTransition[] }> = [];
  for (const node of stateNodesInOrder(machine)) {
    for (const list of node.transitions.values() as Iterable<AnyTransition[]>) out.push({ node, transitions: list });
    if (node.always) out.push({ node, transitions: node.always as unknown as AnyTransition[] });
  }
  return out;
}

/** Every transition of the machine, each guarded branch separately, including `always`. */
export function listTransitions(machine: AnyStateMachine): TransitionInfo[] {
  const out: TransitionInfo[] = [];
  const seen = new Set<string>();
  for (const { transitions } of transitionLists(machine)) {
    for (const t of transitions) {
      const info = describeTransition(t);
      if (seen.has(info.key)) throw new DuplicateTransitionError(info.key);
      seen.add(info.key);
      out.push(info);
    }
  }
  return out;
}

export class DuplicateTransitionError extends Error {
  constructor(key: string) {
    super(`two transitions share the key ${key}; give them distinct guards or targets`);
    this.name = "DuplicateTransitionError";
  }
}

/** All state node ids (including compound and the root). */
export function listStates(machine: AnyStateMachine): string[] {
  return getStateNodes(machine.root).map((n) => n.id);
}

export interface TraversalSpec<TEvent extends AnyEventObject> {
  /** Events to try in a snapshot (function of the snapshot; final snapshots get none). */
  events: (snapshot: AnyMachineSnapshot) => readonly TEvent[];
  /** Only what guards read: keeps the state space finite. */
  serializeState: (snapshot: AnyMachineSnapshot) => string;
  input?: unknown;
  limit?: number;
  /**
   * Reduced alphabet for simple paths (one representative event per guarded branch): simple-path
   * enumeration is exponential in the alphabet, while shortest paths and edge tours use `events`.
   */
  simpleEvents?: (snapshot: AnyMachineSnapshot) => readonly TEvent[];
  /** Hard cap on simple paths kept (deterministic prefix of xstate/graph's order). */
  maxSimplePaths?: number;
}

export interface GeneratedPath<TEvent extends AnyEventObject> {
  kind: "shortest" | "simple" | "edge";
  events: TEvent[];
}

/**
 * The path's events without the traversal's `xstate.init`. An invoked actor's result
 * (`xstate.done.actor.<id>`, `xstate.error.actor.<id>`) stays: xstate/graph traverses the machine with
 * pure transitions (invoked actors never run), so the alphabet offers those results as events, and a
 * replay sends them to the live actor in place of its (never settling) stub's.
 */
function stripInit<TEvent extends AnyEventObject>(steps: ReadonlyArray<{ event: AnyEventObject }>): TEvent[] {
  return steps.map((s) => s.event as TEvent).filter((e) => e.type !== "xstate.init");
}

const ACTOR_RESULT = /^xstate\.(?:done|error)\.actor\.(.+)$/;

/**
 * An invoked actor's done or error event can only arrive while that actor runs: offered only in
 * snapshots that have a child of that id (an error event nothing handles would stop the machine).
 */
function offered<TEvent extends AnyEventObject>(snapshot: AnyMachineSnapshot, events: readonly TEvent[]): TEvent[] {
  return events.filter((event) => {
    const id = ACTOR_RESULT.exec(event.type)?.[1];
    return id === undefined || snapshot.children[id] !== undefined;
  });
}

/**
 * Shortest paths to every reachable state, simple paths to every state, and one edge tour per
 * adjacency edge (shortest path to its source + that event), deduplicated by event sequence.
 */
export function generatePaths<TEvent extends AnyEventObject>(
  machine: AnyStateMachine,
  spec: TraversalSpec<TEvent>,
  options: { simple?: boolean } = {},
): GeneratedPath<TEvent>[] {
  const events = (s: AnyMachineSnapshot) => (s.status === "done" ? [] : offered(s, spec.events(s)));
  const opts = {
    events,
    serializeState: (s: AnyMachineSnapshot) => spec.serializeState(s),
    limit: spec.limit ?? 5_000,
    ...(spec.input === undefined ? {} : { input: spec.input }),
  } as never;
  const seen = new Set<string>();
  const out: GeneratedPath<TEvent>[] = [];
  const add = (kind: GeneratedPath<TEvent>["kind"], evs: TEvent[]) => {
    const k = JSON.stringify(evs);
    if (seen.has(k)) return;
    seen.add(k);
    out.push({ kind, events: evs });
  };
  const shortest = getShortestPaths(machine, opts);
  const bySerialized = new Map<string, TEvent[]>();
  for (const p of shortest) {
    const evs = stripInit<TEvent>(p.steps);
    bySerialized.set(spec.serializeState(p.state as AnyMachineSnapshot), evs);
    add("shortest", evs);
  }
  if (options.simple !== false) {
    const simpleEvents = spec.simpleEvents ?? spec.events;
    const simpleOpts = {
      ...(opts as object),
      events: (s: AnyMachineSnapshot) => (s.status === "done" ? [] : offered(s, simpleEvents(s))),
    } as never;
    const simple = getSimplePaths(machine, simpleOpts);
    const max = spec.maxSimplePaths ?? 2_000;
    if (simple.length > max) throw new TooManyPathsError(machine.id, simple.length, max);
    for (const p of simple) add("simple", stripInit<TEvent>(p.steps));
  }
  const adjacency = getAdjacencyMap(machine, opts) as unknown as Record<
    string,
    { transitions: Record<string, { event: TEvent }> }
  >;
  for (const [vertex, value] of Object.entries(adjacency)) {
    const prefix = bySerialized.get(vertex);
    if (!prefix) continue;
    for (const { event } of Object.values(value.transitions)) add("edge", [...prefix, event]);
  }
  return out;
}

export class TooManyPathsError extends Error {
  constructor(machine: string, count: number, max: number) {
    super(`${machine}: ${count} simple paths exceed the bound ${max}; reduce simpleEvents or serializeState`);
    this.name = "TooManyPathsError";
  }
}

export interface StepInfo<TEvent extends AnyEventObject> {
  index: number;
  prev: AnyMachineSnapshot;
  event: TEvent;
  next: AnyMachineSnapshot;
  /** Transition keys taken by this event (from inspect microsteps). */
  taken: string[];
  /** Emitted events (actor.on('*')) during this step. */
  emitted: AnyEventObject[];
}

/** Replays events through a live actor; returns the transition keys taken. */
export function replay<TEvent extends AnyEventObject>(
  machine: AnyStateMachine,
  events: readonly TEvent[],
  options: { input?: unknown; onStep?: (step: StepInfo<TEvent>) => void; onStart?: () => void } = {},
): Set<string> {
  const covered = new Set<string>();
  let taken: string[] = [];
  const actor = createActor(machine, {
    ...(options.input === undefined ? {} : { input: options.input }),
    inspect: (ev) => {
      if (ev.type !== "@xstate.microstep") return;
      for (const t of (ev as unknown as { _transitions: AnyTransition[] })._transitions) {
        const key = describeTransition(t).key;
        covered.add(key);
        taken.push(key);
      }
    },
  });
  let emitted: AnyEventObject[] = [];
  actor.on("*", (e: AnyEventObject) => emitted.push(e));
  // A machine that fails (e.g. an actor's error event no state handles) shows as a snapshot with status
  // "error" to the step's check, instead of an uncaught exception.
  actor.subscribe({ error: () => {} });
  actor.start();
  options.onStart?.();
  let prev = actor.getSnapshot() as AnyMachineSnapshot;
  events.forEach((event, index) => {
    taken = [];
    emitted = [];
    actor.send(event);
    const next = actor.getSnapshot() as AnyMachineSnapshot;
    options.onStep?.({ index, prev, event, next, taken, emitted });
    prev = next;
  });
  actor.stop();
  return covered;
}

export interface CoverageReport {
  machine: string;
  states: number;
  transitions: number;
  paths: { shortest: number; simple: number; edge: number; total: number };
  covered: number;
  uncovered: string[];
  percent: number;
}

export function coverageReport(
  machine: AnyStateMachine,
  paths: ReadonlyArray<GeneratedPath<AnyEventObject>>,
  covered: ReadonlySet<string>,
): CoverageReport {
  const all = listTransitions(machine).map((t) => t.key);
  const uncovered = all.filter((k) => !covered.has(k));
  const count = (k: GeneratedPath<AnyEventObject>["kind"]) => paths.filter((p) => p.kind === k).length;
  return {
    machine: machine.id,
    states: listStates(machine).length,
    transitions: all.length,
    paths: { shortest: count("shortest"), simple: count("simple"), edge: count("edge"), total: paths.length },
    covered: all.length - uncovered.length,
    uncovered,
    percent: all.length === 0 ? 100 : Math.round((10_000 * (all.length - uncovered.length)) / all.length) / 100,
  };
}

export class UncoveredTransitionsError extends Error {
  constructor(report: CoverageReport) {
    super(
      `${report.machine}: generated paths cover ${report.covered}/${report.transitions} transitions ` +
        `(${report.percent}%). Uncovered:\n  ${report.uncovered.join("\n  ")}`,
    );
    this.name = "UncoveredTransitionsError";
  }
}

/** Throws UncoveredTransitionsError listing every uncovered transition unless coverage is 100%. */
export function assertFullCoverage(report: CoverageReport): void {
  if (report.uncovered.length > 0) throw new UncoveredTransitionsError(report);
}

export function formatReport(r: CoverageReport): string {
  return (
    `[machines] ${r.machine}: states=${r.states} transitions=${r.transitions} ` +
    `paths=${r.paths.total} (shortest=${r.paths.shortest} simple=${r.paths.simple} edge=${r.paths.edge}) ` +
    `coverage=${r.covered}/${r.transitions} (${r.percent}%)`
  );
}

export interface SuiteResult {
  report: CoverageReport;
  /** Invariant violations (at most `maxViolations`), each followed by the path that produced it. */
  violations: string[];
  steps: number;
}

/**
 * The generated model-based suite of one machine: for each input, generate paths, replay each
 * through a live actor with a fresh per-path trace, check the invariants after every step, and
 * measure transition coverage over all of them.
 */
export function runPathSuite<TEvent extends AnyEventObject, TTrace, TInput = undefined>(
  machine: AnyStateMachine,
  options: {
    inputs?: readonly TInput[];
    spec: (input: TInput) => TraversalSpec<TEvent>;
    trace: () => TTrace;
    check: (step: StepInfo<TEvent>, trace: TTrace, input: TInput) => readonly string[];
    maxViolations?: number;
    /**
     * A negative control's target: once a violation it matches is found, the rest is not replayed (the
     * report then covers what was replayed).
     */
    stopWhen?: (violation: string) => boolean;
    /** Called once the path's actor has started, before its first event (e.g. to reset stub actors' records). */
    started?: (trace: TTrace) => void;
  },
): SuiteResult {
  const paths: GeneratedPath<TEvent>[] = [];
  const covered = new Set<string>();
  const violations: string[] = [];
  const max = options.maxViolations ?? 20;
  let steps = 0;
  let found = false;
  for (const input of options.inputs ?? [undefined as TInput]) {
    if (found) break;
    const generated = generatePaths<TEvent>(machine, options.spec(input));
    paths.push(...generated);
    for (const path of generated) {
      if (found) break;
      const trace = options.trace();
      const replayed = replay(machine, path.events, {
        ...(input === undefined ? {} : { input }),
        onStart: () => options.started?.(trace),
        onStep: (step) => {
          steps++;
          for (const message of options.check(step, trace, input)) {
            if (violations.length >= max) break;
            const where = input === undefined ? "" : `input ${JSON.stringify(input)} `;
            violations.push(`${message}\n    ${where}path: ${path.events.map((e) => JSON.stringify(e)).join(" → ")}`);
            if (options.stopWhen?.(message)) found = true;
          }
        },
      });
      for (const key of replayed) covered.add(key);
    }
  }
  return { report: coverageReport(machine, paths, covered), violations, steps };
}
