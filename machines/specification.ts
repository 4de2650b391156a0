// The current specification: the user's request the model works toward, shown in every runtime
// context. A run a user prompt starts replaces it. A run a message starts (another extension's
// `sendMessage(…, {triggerTurn: true})`) is not a new user request, so it continues the current
// one and says what started it. User messages Pi delivers inside a run (steering, queued
// follow-ups) are user requests too: they are added to it, in order.
//
// A request whose run ended without an accepted answer (aborted, a provider error, the length
// limit, a store that refused every patch, steering exhausted) is not forgotten: when a prompt
// replaces it, it is kept as an earlier, interrupted request, shown with every later run until a
// run's answer is accepted. Only the user's words carry over, never the interrupted run's partial
// text or tool trajectory (001: "Completed-run trajectories leave model context only at user-run
// boundaries"; interrupted endings never reach response). At most MAX_INTERRUPTED are kept, the
// oldest dropped first and counted, so the model is told that some were dropped.

export type RunTrigger =
  | { readonly kind: "prompt"; readonly text: string }
  /** `source`: the starting message's customType, when the host knows it. */
  | { readonly kind: "message"; readonly source: string | null };

/** A user request as it was given: its prompt and what the user added during its runs. */
export interface Request {
  readonly request: string;
  readonly added: readonly string[];
}

export interface Specification extends Request {
  /** What started the current run when it was not a user prompt (null: a prompt started it). */
  readonly startedBy: { readonly source: string | null } | null;
  /** The current request's last run ended without an accepted answer. */
  readonly unanswered: boolean;
  /** Earlier requests whose runs ended without an accepted answer, oldest first (at most MAX_INTERRUPTED). */
  readonly interrupted: readonly Request[];
  /** How many older interrupted requests were dropped to keep that bound. */
  readonly dropped: number;
}

/** How many interrupted requests are carried: enough for a string of failures, not an unbounded backlog. */
export const MAX_INTERRUPTED = 5;

export const NO_SPECIFICATION: Specification = {
  request: "",
  added: [],
  startedBy: null,
  unanswered: false,
  interrupted: [],
  dropped: 0,
};

export function specificationForRun(current: Specification, trigger: RunTrigger): Specification {
  if (trigger.kind === "message") return { ...current, startedBy: { source: trigger.source } };
  const open = current.unanswered && (current.request.trim() !== "" || current.added.length > 0);
  const carried = open
    ? [...current.interrupted, { request: current.request, added: current.added }]
    : current.interrupted;
  const kept = carried.slice(-MAX_INTERRUPTED);
  return {
    request: trigger.text,
    added: [],
    startedBy: null,
    unanswered: false,
    interrupted: kept,
    dropped: current.dropped + carried.length - kept.length,
  };
}

/**
 * The specification a run leaves: an accepted answer answers the current request and every
 * interrupted one before it (the model saw them all); otherwise the current request stays open.
 */
export function specificationAfterRun(current: Specification, answered: boolean): Specification {
  if (!answered) return { ...current, unanswered: true };
  return { ...current, unanswered: false, interrupted: [], dropped: 0 };
}

/** A run that began unnamed (see adapters/pi/pi-versions.ts) learns its source from its first message. */
export function withRunSource(current: Specification, source: string): Specification {
  return current.startedBy ? { ...current, startedBy: { source } } : current;
}

export function withUserMessage(current: Specification, text: string): Specification {
  return { ...current, added: [...current.added, text] };
}

function requestLines(request: Request): string[] {
  const lines = [`- ${request.request.trim() || "(empty)"}`];
  for (const text of request.added) lines.push(`  added during its run: ${text.trim() || "(empty)"}`);
  return lines;
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
  if (spec.interrupted.length > 0) {
    lines.push(
      "",
      "Earlier requests whose runs were interrupted before an answer was accepted (oldest first; their partial " +
        "work is not shown — check its effects before repeating it). They may still be wanted:",
    );
    for (const request of spec.interrupted) lines.push(...requestLines(request));
  }
  if (spec.dropped > 0) {
    lines.push(
      `(${spec.dropped} older interrupted request(s) were dropped: only the newest ${MAX_INTERRUPTED} are kept)`,
    );
  }
  return lines;
}

/** What a branch records of its interrupted requests, so that a resume or a /tree to that point carries them on. */
export interface CarriedRequests {
  readonly interrupted: readonly Request[];
  readonly dropped: number;
}

export const NOTHING_CARRIED: CarriedRequests = { interrupted: [], dropped: 0 };

/** The interrupted requests the next prompt would carry: the ones kept, and the current one when left open. */
export function carriedRequests(spec: Specification): CarriedRequests {
  const next = specificationForRun(spec, { kind: "prompt", text: "" });
  return { interrupted: next.interrupted, dropped: next.dropped };
}

/** The specification a session or a selected branch point starts from: no current request, its carried ones. */
export function specificationCarrying(carried: CarriedRequests = NOTHING_CARRIED): Specification {
  return { ...NO_SPECIFICATION, interrupted: carried.interrupted, dropped: carried.dropped };
}
