// Generated patch_state arguments — valid ones, near misses and garbage — applied one after
// another to a view that starts empty, through the same calls the tool makes (parsePatchSet,
// then stageCohort, so tails fold after eight accepted transitions). Every argument must be
// either refused with a StateFlowError, leaving the view as it was (views are deep-frozen, so a
// mutation throws a TypeError and fails the run), or accepted. After each accepted one every
// scope stream goes through the codec as bytes into a fresh view, which must match a naive
// full-snapshot oracle at every offset and scope. Whether an argument is accepted is predicted
// by a naive rule written here, independently of storage/core/json.ts and storage/core/scope-state.ts.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import { parseScopeStream, serializeScopeStream } from "../../../storage/core/codec.ts";
import { StateFlowError } from "../../../storage/core/errors.ts";
import { MAX_JSON_DEPTH } from "../../../storage/core/json.ts";
import { SCOPES, type ScopeSelector } from "../../../storage/core/scope-state.ts";
import {
  HOT_OFFSETS,
  availableOffsets,
  createView,
  originateView,
  readTemporalState,
  type TemporalView,
} from "../../../storage/core/temporal.ts";
import { SnapshotOracle, naiveMerge, stableStringify, type Scope } from "../../support/oracle.ts";

const SEQUENCES = 625;
const SEQUENCE_LENGTH = 16;
const MIN_ARGUMENTS = 10_000;

// ---- generators ---------------------------------------------------------------------------

class Thing {
  readonly x = 1;
}

/** Values no JSON position accepts. `null` is not among them: where it may stand is the point. */
const poison: fc.Arbitrary<unknown> = fc.constantFrom<unknown>(
  undefined,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  () => 1,
  new Thing(),
  new Date(0),
  new Map(),
  Object.create({ inherited: 1 }),
  [1, , 3],
  10n,
  Symbol("s"),
);

// A few huge strings, built once, with a lone surrogate so their bytes must be escaped to stay UTF-8.
const HUGE = [64 * 1024, 256 * 1024].map((n) => `${"h".repeat(n - 2)}\ud83d!`);

const text = fc.oneof(
  { weight: 4000, arbitrary: fc.constantFrom("x", "y", "", " ", "a\udfffb", "\ud800", "💡", "\u2028", "toString") },
  { weight: 1000, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.constantFrom(...HUGE) },
);
const number = fc.constantFrom(0, 1, 2, -0, 1.5, -7, 1e21, 5e-324, Number.MAX_SAFE_INTEGER + 2);
const leaf = fc.oneof(text, number, fc.boolean());
const key = fc.constantFrom("a", "b", "c", "", "__proto__", "constructor", "prototype", "toJSON", "\ud800");

/** `replace`: values stored as they are (array contents); `merge`: members of merging objects. */
const { merge } = fc.letrec((tie) => ({
  replace: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 60, arbitrary: leaf },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: poison },
    { weight: 8, arbitrary: fc.array(tie("replace"), { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.sparseArray(tie("replace"), { maxLength: 3 }) },
    { weight: 8, arbitrary: fc.dictionary(key, tie("replace"), { maxKeys: 3 }) },
  ),
  merge: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 60, arbitrary: leaf },
    { weight: 15, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: poison },
    { weight: 8, arbitrary: fc.array(tie("replace"), { maxLength: 3 }) },
    { weight: 12, arbitrary: fc.dictionary(key, tie("merge"), { maxKeys: 3 }) },
  ),
}));

/** One chain of containers around a bottom value, on both sides of the nesting limit. */
const deep = fc
  .record({
    levels: fc.integer({ min: 1, max: MAX_JSON_DEPTH + 2 }),
    shape: fc.constantFrom("objects", "arrays", "alternating"),
    bottom: fc.constantFrom<unknown>("leaf", null, {}),
  })
  .map(({ levels, shape, bottom }) => {
    let value = bottom;
    for (let i = 0; i < levels; i++) {
      const array = shape === "arrays" || (shape === "alternating" && i % 2 === 1);
      value = array ? [value] : { d: value };
    }
    return value;
  });

const fieldPatch = fc.oneof(
  { weight: 60, arbitrary: fc.dictionary(key, merge, { minKeys: 1, maxKeys: 3 }) },
  { weight: 2, arbitrary: deep.map((d) => ({ deep: d })) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>({}, 5, "x", [1], null, true) },
);

const rarely = <T, U>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 12, arbitrary: usual }, { weight: 1, arbitrary: odd });
/** A rare provenance member: forged (refused) unless it is null, which deletes rather than asserts. */
const provenance = rarely(
  fc.constant({}),
  fc.constantFrom<object>(
    { sourceHash: `sha256:${"0".repeat(64)}` },
    { compilerRevision: "artifact-v1" },
    { compiledAt: "2026-01-01T00:00:00Z" },
    { hash: "x" },
    { compiler: "artifact-v1" },
    { compiled_at: 1 },
    { compiled_at: null },
    { sourceHash: null },
  ),
);
const artifact = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .tuple(
        fc.record(
          {
            description: rarely(fc.constantFrom("what it holds", "d"), fc.constantFrom(" ", "", 5)),
            kind: rarely(fc.constant("doc"), fc.constantFrom("", null)),
            tags: rarely(
              fc.uniqueArray(fc.constantFrom("a", "b"), { maxLength: 2 }),
              fc.constantFrom<unknown>(["a", "a"], [" c"], "a"),
            ),
            compilation: rarely(fc.dictionary(key, merge, { maxKeys: 2 }), fc.constantFrom<unknown>(null, [], 1)),
          },
          { requiredKeys: ["description"] },
        ),
        provenance,
      )
      .map(([fields, extra]) => ({ ...fields, ...extra })),
  },
  { weight: 3, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: merge },
);
const artifacts = fc.dictionary(fc.constantFrom("/a.md", "/b.md", "__proto__", "constructor", "prototype"), artifact, {
  maxKeys: 2,
});

/** A rare extra member of a scope patch: response, an unknown field, a wrong type. */
const scopeExtra = fc.oneof(
  { weight: 80, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: text.map((response) => ({ response })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom({ notes: {} }, { __proto__x: 1 }, { working: null }, { contract: [{ a: 1 }] }),
  },
);
const scopePatch = fc
  .tuple(
    fc.oneof(
      { weight: 2, arbitrary: fc.record({ working: fieldPatch }) },
      { weight: 1, arbitrary: fc.record({ contract: fieldPatch }) },
      { weight: 1, arbitrary: fc.record({ contract: fieldPatch, working: fieldPatch }) },
      { weight: 1, arbitrary: fc.record({ artifacts }) },
    ),
    scopeExtra,
  )
  .map(([fields, extra]) => ({ ...fields, ...extra }));
const scopeValue = fc.oneof(
  { weight: 80, arbitrary: scopePatch },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(5, "x", [], null, true, undefined, new Thing(), Object.create(null)),
  },
);

const modelArgument = fc
  .tuple(
    fc.record(
      { global: scopeValue, cwd: scopeValue, session: scopeValue, final: fc.boolean() },
      { requiredKeys: [], noNullPrototype: true },
    ),
    fc.oneof(
      { weight: 80, arbitrary: fc.constant({}) },
      {
        weight: 1,
        arbitrary: fc.constantFrom<object>(
          { final: "yes" },
          { final: 1 },
          { scope: "session" },
          { response: "x" },
          { project: {} },
        ),
      },
    ),
  )
  .map(([record, extra]) => ({ ...record, ...extra }));

interface Call {
  input: unknown;
  /** The runtime's own response capture; every other call is the model's. */
  runtime: boolean;
}

const call: fc.Arbitrary<Call> = fc.oneof(
  { weight: 80, arbitrary: modelArgument.map((input) => ({ input, runtime: false })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<unknown>(undefined, null, 5, "patch", [], [{ session: {} }], new Thing(), Object.create(null), Date)
      .map((input) => ({ input, runtime: false })),
  },
  { weight: 2, arbitrary: text.map((response) => ({ input: { session: { response } }, runtime: true })) },
);

// ---- the naive acceptance rule -------------------------------------------------------------

const own = (value: object, key: string): boolean => Object.prototype.hasOwnProperty.call(value, key);

function plainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(value).length === 0;
}

/** A value stored as it is: no null anywhere. `level` is the container depth it would open. */
function storable(value: unknown, level: number): boolean {
  if (typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (level > MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!own(value, String(i)) || !storable(value[i], level + 1)) return false;
    return true;
  }
  return plainObject(value) && Object.keys(value).every((k) => storable(value[k], level + 1));
}

/** An object that merges: its members may be null (deletion) or merge in turn. */
function merging(value: unknown, level: number): boolean {
  if (!plainObject(value) || level > MAX_JSON_DEPTH) return false;
  return Object.keys(value).every((k) => {
    const member = value[k];
    if (member === null) return true;
    return plainObject(member) ? merging(member, level + 1) : storable(member, level + 1);
  });
}

const PROVENANCE_NAMES = ["sourceHash", "compilerRevision", "compiledAt", "hash", "compiler", "compiled_at"];

/** An artifacts patch sets no provenance: patch_state is model-authored, and only null (deletion) may name it. */
function unforged(artifacts: Record<string, unknown>): boolean {
  return Object.values(artifacts).every(
    (entry) => !plainObject(entry) || PROVENANCE_NAMES.every((name) => !own(entry, name) || entry[name] === null),
  );
}

function scopePatchAccepted(value: unknown, runtime: boolean): boolean {
  if (!merging(value, 1)) return false;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return false;
  return entries.every(([field, change]) =>
    field === "response"
      ? runtime && typeof change === "string"
      : ["artifacts", "contract", "working"].includes(field) &&
        plainObject(change) &&
        (field !== "artifacts" || unforged(change)),
  );
}

function parseAccepted({ input, runtime }: Call): boolean {
  if (!plainObject(input) || Object.getPrototypeOf(input) !== Object.prototype) return false;
  let scopes = 0;
  let final = false;
  for (const [name, value] of Object.entries(input)) {
    if (name === "final") {
      if (typeof value !== "boolean") return false;
      final = value;
    } else if ((SCOPES as readonly string[]).includes(name)) {
      if (!scopePatchAccepted(value, runtime)) return false;
      scopes++;
    } else {
      return false;
    }
  }
  return scopes > 0 || final;
}

function artifactValid(value: unknown): boolean {
  if (!plainObject(value)) return false;
  const { description, kind, tags, compilation } = value;
  if (typeof description !== "string" || description.trim().length === 0) return false;
  if (own(value, "kind") && (typeof kind !== "string" || kind.length === 0)) return false;
  if (own(value, "compilation") && !plainObject(compilation)) return false;
  if (!own(value, "tags")) return true;
  return (
    Array.isArray(tags) &&
    tags.every((t) => typeof t === "string" && t.length > 0 && t.trim() === t) &&
    new Set(tags).size === tags.length
  );
}

type StageOutcome = "accepted" | "invalid-artifact" | "no-op-cohort" | "empty-cohort";

/** What staging must do; the oracle records the transition exactly when the answer is "accepted". */
function expectedStage(oracle: SnapshotOracle, patches: Partial<Record<Scope, Record<string, unknown>>>): StageOutcome {
  if (Object.keys(patches).length === 0) return "empty-cohort";
  const before = oracle.boundaries[oracle.boundaries.length - 1]!;
  for (const scope of SCOPES) {
    const change = patches[scope]?.artifacts;
    if (change === undefined) continue;
    const merged = naiveMerge(before[scope].artifacts, change) as Record<string, unknown>;
    if (!Object.keys(merged).every((k) => artifactValid(merged[k]))) return "invalid-artifact";
  }
  return oracle.apply(patches) ? "accepted" : "no-op-cohort";
}

// ---- checks ----------------------------------------------------------------------------------

/** Freezes what is not frozen yet (shared subtrees already are), so any later mutation throws. */
function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}

function code(error: unknown): string {
  if (error instanceof StateFlowError && typeof error.code === "string") return error.code;
  throw error;
}

const bytes = new TextEncoder();

/** What a fresh runtime sees: every stream encoded to bytes and parsed back, lineage from meta. */
function reopened(view: TemporalView): TemporalView {
  const streams = Object.fromEntries(
    SCOPES.map((scope) => {
      const files = serializeScopeStream(view.streams[scope]);
      const parsed = parseScopeStream(scope, {
        checkpoint: bytes.encode(files.checkpoint),
        patches: bytes.encode(files.patches),
      });
      const again = serializeScopeStream(parsed);
      if (again.checkpoint !== files.checkpoint || again.patches !== files.patches) {
        expect.fail(`${scope} does not re-serialize to the bytes it was parsed from`);
      }
      return [scope, parsed];
    }),
  ) as TemporalView["streams"];
  return createView(structuredClone(view.lineage), streams);
}

const SELECTORS = ["effective", ...SCOPES] as ScopeSelector[];

/** Structural equality, own keys in any order (independent of storage/core/json.ts). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => own(b, k) && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** The oracle's states per boundary, built once: a boundary never changes once recorded. */
class RenderedOracle {
  readonly oracle = new SnapshotOracle();
  private readonly rendered: unknown[][] = [];

  at(offset: number): unknown[] {
    const index = this.oracle.boundaries.length - 1 - offset;
    this.rendered[index] ??= SELECTORS.map((scope) => this.oracle.at(offset, scope));
    return this.rendered[index]!;
  }
}

/** Offsets below `offsets` × every scope of `view` against the oracle; one expectation naming each difference. */
function matchesOracle(view: TemporalView, expected: RenderedOracle, offsets: number, label: string): void {
  const available = expected.oracle.available;
  const mismatches: string[] = [];
  const offered = availableOffsets(view.lineage);
  if (offered !== available) mismatches.push(`${label}: ${offered} offsets, the oracle has ${available}`);
  for (let offset = 0; offset < Math.min(offsets, available); offset++) {
    const want = expected.at(offset);
    SELECTORS.forEach((scope, s) => {
      const got = readTemporalState(view, offset, scope).state;
      if (same(got, want[s])) return;
      const show = (x: unknown) => stableStringify(x).slice(0, 300);
      mismatches.push(`${label} offset ${offset} ${scope}: ${show(got)} != ${show(want[s])}`);
    });
  }
  expect(mismatches).toEqual([]);
}

interface Counts {
  accepted: number;
  rejected: number;
  byCode: Record<string, number>;
  folds: number;
}

function runSequence(calls: Call[], counts: Counts, sequence: number): void {
  let view = originateView("L");
  deepFreeze(view);
  const expected = new RenderedOracle();
  const oracle = expected.oracle;
  calls.forEach((c, i) => {
    const expectParse = parseAccepted(c);
    let patches: ReturnType<typeof parsePatchSet>["patches"];
    try {
      patches = parsePatchSet(c.input, { allowResponse: c.runtime }).patches;
    } catch (error) {
      const refused = code(error);
      const message = String((error as Error).message).slice(0, 200);
      expect(expectParse, `the naive rule accepts it, parsePatchSet refused it as ${refused}: ${message}`).toBe(false);
      counts.rejected++;
      counts.byCode[refused] = (counts.byCode[refused] ?? 0) + 1;
      return;
    }
    expect(expectParse, "parsePatchSet accepted what the naive rule refuses").toBe(true);
    const raw = Object.fromEntries(
      SCOPES.filter((s) => own(c.input as object, s)).map((s) => [s, (c.input as Record<string, unknown>)[s]]),
    ) as Partial<Record<Scope, Record<string, unknown>>>;
    const outcome = expectedStage(oracle, raw);
    let next: TemporalView;
    try {
      next = stageCohort(view, patches, `T${sequence}-${i}`).view;
    } catch (error) {
      const refused = code(error);
      expect(refused, `stageCohort: ${String((error as Error).message).slice(0, 200)}`).toBe(outcome);
      counts.rejected++;
      counts.byCode[refused] = (counts.byCode[refused] ?? 0) + 1;
      return;
    }
    expect(outcome, "stageCohort accepted it").toBe("accepted");
    deepFreeze(next);
    view = next;
    counts.accepted++;
    if (SCOPES.some((s) => view.streams[s].checkpoint.through.step > 0)) counts.folds++;
    // The reopened streams re-serialize to the live bytes, so the live view can differ from them
    // only in its cached current state (offset 0); every offset is read from the reopened view.
    matchesOracle(view, expected, 1, "live");
    matchesOracle(reopened(view), expected, HOT_OFFSETS, "reopened");
  });
}

describe("patch_state fuzz: accepted arguments always survive the codec", () => {
  it(`${SEQUENCES * SEQUENCE_LENGTH} generated arguments are refused by name or round-trip exactly`, () => {
    const counts: Counts = { accepted: 0, rejected: 0, byCode: {}, folds: 0 };
    let sequence = 0;
    fc.assert(
      fc.property(fc.array(call, { minLength: SEQUENCE_LENGTH, maxLength: SEQUENCE_LENGTH }), (calls) => {
        const attempt: Counts = { accepted: 0, rejected: 0, byCode: {}, folds: 0 };
        runSequence(calls, attempt, sequence++);
        counts.accepted += attempt.accepted;
        counts.rejected += attempt.rejected;
        counts.folds += attempt.folds;
        for (const [k, n] of Object.entries(attempt.byCode)) counts.byCode[k] = (counts.byCode[k] ?? 0) + n;
      }),
      { numRuns: SEQUENCES },
    );
    const total = counts.accepted + counts.rejected;
    console.log(
      `patch fuzz: ${counts.accepted} accepted + ${counts.rejected} rejected = ${total}`,
      counts.byCode,
      `accepted after a fold: ${counts.folds}`,
    );
    expect(total).toBe(SEQUENCES * SEQUENCE_LENGTH);
    expect(total).toBeGreaterThanOrEqual(MIN_ARGUMENTS);
    expect(counts.accepted).toBeGreaterThan(0);
    expect(counts.rejected).toBeGreaterThan(0);
    expect(counts.folds).toBeGreaterThan(0);
  });
});
