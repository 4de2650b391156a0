// A naive full-snapshot oracle for the temporal core: it keeps every boundary's complete state
// of every scope, written independently of storage/core/json.ts so the two can disagree.

export type Scope = "global" | "cwd" | "session";
export type Snapshot = Record<Scope, Record<string, unknown>>;

const SCOPE_NAMES: Scope[] = ["global", "cwd", "session"];

function own(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function naiveMerge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return copy(patch);
  const out: Record<string, unknown> = isObject(target) ? copy(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else own(out, key, naiveMerge(Object.prototype.hasOwnProperty.call(out, key) ? out[key] : undefined, value));
  }
  return out;
}

function naiveOverlay(lower: unknown, upper: unknown): unknown {
  if (upper === undefined) return copy(lower);
  if (!isObject(lower) || !isObject(upper)) return copy(upper);
  const out: Record<string, unknown> = copy(lower);
  for (const [key, value] of Object.entries(upper)) {
    own(out, key, naiveOverlay(Object.prototype.hasOwnProperty.call(out, key) ? out[key] : undefined, value));
  }
  return out;
}

export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

export function emptyScope(): Record<string, unknown> {
  return { artifacts: {}, contract: {}, working: {}, response: "" };
}

export class SnapshotOracle {
  readonly boundaries: Snapshot[] = [];

  constructor(initial?: Snapshot) {
    this.boundaries.push(initial ? copy(initial) : { global: emptyScope(), cwd: emptyScope(), session: emptyScope() });
  }

  /** Applies a cohort; returns false (and records nothing) when it changes nothing. */
  apply(patches: Partial<Record<Scope, Record<string, unknown>>>): boolean {
    const before = this.boundaries[this.boundaries.length - 1]!;
    const next = copy(before);
    for (const scope of SCOPE_NAMES) {
      const patch = patches[scope];
      if (patch) next[scope] = naiveMerge(next[scope], patch) as Record<string, unknown>;
    }
    if (stableStringify(next) === stableStringify(before)) return false;
    this.boundaries.push(next);
    return true;
  }

  /** Offsets reachable: all boundaries since the origin, at most eight. */
  get available(): number {
    return Math.min(8, this.boundaries.length);
  }

  at(offset: number, scope: Scope | "effective"): Record<string, unknown> {
    const snap = this.boundaries[this.boundaries.length - 1 - offset];
    if (!snap) throw new Error(`oracle has no boundary at offset ${offset}`);
    if (scope !== "effective") return copy(snap[scope]);
    const field = (name: string): unknown =>
      naiveOverlay(naiveOverlay(snap.global[name], snap.cwd[name]), snap.session[name]);
    return {
      artifacts: field("artifacts"),
      contract: field("contract"),
      working: field("working"),
      response: (snap.session.response || snap.cwd.response || snap.global.response) as string,
    };
  }
}
