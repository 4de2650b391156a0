import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import { planArtifactInvalidations, type DiscoveredSource } from "../../../storage/core/invalidation.ts";
import type { JsonObject } from "../../../storage/core/json.ts";
import {
  MAINTENANCE_DEFAULTS,
  planArtifactMaintenance,
  type MaintenanceBudget,
  type MaintenanceInput,
} from "../../../storage/core/maintenance.ts";
import { emptyProvenance, parseProvenance } from "../../../storage/core/provenance.ts";
import { comparePaths } from "../../../storage/layout.ts";

const K = "/k";
const H1 = `sha256:${"1".repeat(64)}`;
const H2 = `sha256:${"2".repeat(64)}`;
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 1);
const daysAgo = (days: number) => new Date(NOW - days * DAY).toISOString();

function plan(
  entries: Record<string, { bytes?: number; compiledAt?: unknown; meta?: object }>,
  fields: Partial<MaintenanceInput> = {},
) {
  const sources = new Map<string, DiscoveredSource>();
  const artifacts: JsonObject = {};
  const meta: Record<string, object> = {};
  for (const [path, e] of Object.entries(entries)) {
    sources.set(path, { hash: H1, bytes: e.bytes ?? 100 });
    artifacts[path] = { description: "d" };
    const record: Record<string, unknown> = { sourceHash: H1, compilerRevision: "artifact-v1", ...e.meta };
    if (e.compiledAt !== undefined) record.compiledAt = e.compiledAt;
    meta[path] = record;
  }
  const provenance = parseProvenance({ version: 1, artifacts: meta });
  return planArtifactMaintenance({ root: K, sources, artifacts, provenance, now: NOW, ...fields });
}

const paths = (candidates: { path: string }[]) => candidates.map((c) => c.path);

describe("planArtifactMaintenance", () => {
  it("defaults to one source within 16 KiB after 30 days", () => {
    expect(MAINTENANCE_DEFAULTS).toEqual({ maxSources: 1, maxBytes: 16384, minAgeDays: 30 });
    const result = plan({
      "/k/young.md": { compiledAt: daysAgo(29) },
      "/k/old.md": { compiledAt: daysAgo(31) },
      "/k/older.md": { compiledAt: daysAgo(400) },
      "/k/edge.md": { compiledAt: daysAgo(30) },
    });
    expect(result.selected).toEqual([{ path: "/k/older.md", bytes: 100, compiledAt: daysAgo(400) }]);
    expect(paths(result.deferred)).toEqual(["/k/old.md", "/k/edge.md"]);
  });

  it("ranks missing and unparseable compile times first, then the oldest, then path", () => {
    const result = plan(
      {
        "/k/b.md": { compiledAt: "2026-02-30T00:00:00Z" },
        "/k/a.md": {},
        "/k/c.md": { compiledAt: 7 },
        "/k/x.md": { compiledAt: daysAgo(40) },
        "/k/w.md": { compiledAt: daysAgo(40) },
        "/k/v.md": { compiledAt: daysAgo(90) },
      },
      { budget: { maxSources: 10, maxBytes: 1e6 } },
    );
    expect(paths(result.selected)).toEqual(["/k/a.md", "/k/b.md", "/k/c.md", "/k/v.md", "/k/w.md", "/k/x.md"]);
    expect(result.selected[1]!.compiledAt).toBeNull();
  });

  it("never offers what correctness invalidation already lists, nor sources without an artifact", () => {
    const sources = new Map<string, DiscoveredSource>([
      ["/k/changed.md", { hash: H2, bytes: 1 }],
      ["/k/refresh.md", { hash: H1, bytes: 1 }],
      ["/k/new.md", { hash: H1, bytes: 1 }],
      ["/k/stale.md", { hash: H1, bytes: 1 }],
      ["/k/ok.md", { hash: H1, bytes: 1 }],
    ]);
    const old = { sourceHash: H1, compilerRevision: "artifact-v1", compiledAt: daysAgo(100) };
    const input: MaintenanceInput = {
      root: K,
      sources,
      artifacts: {
        "/k/changed.md": { description: "d" },
        "/k/refresh.md": { description: "d" },
        "/k/stale.md": { description: "d" },
        "/k/ok.md": { description: "d" },
        "/k/gone.md": { description: "d" },
      },
      provenance: parseProvenance({
        version: 1,
        artifacts: {
          "/k/changed.md": old,
          "/k/refresh.md": old,
          "/k/stale.md": { ...old, compilerRevision: "artifact-v0" },
          "/k/ok.md": old,
        },
      }),
      refresh: ["/k/refresh.md"],
      now: NOW,
      budget: { maxSources: 10 },
    };
    expect(paths(planArtifactMaintenance(input).selected)).toEqual(["/k/ok.md"]);
  });

  it("holds strict count and byte ceilings, zero included, skipping what does not fit", () => {
    const entries = {
      "/k/a.md": { bytes: 20_000 },
      "/k/b.md": { bytes: 10_000 },
      "/k/c.md": { bytes: 6_000 },
      "/k/d.md": { bytes: 0 },
    };
    expect(paths(plan(entries, { budget: { maxSources: 3 } }).selected)).toEqual(["/k/b.md", "/k/c.md", "/k/d.md"]);
    expect(paths(plan(entries, { budget: { maxSources: 0 } }).selected)).toEqual([]);
    expect(paths(plan(entries, { budget: { maxSources: 4, maxBytes: 0 } }).selected)).toEqual(["/k/d.md"]);
    expect(paths(plan(entries, { budget: { maxSources: 4, maxBytes: 0 } }).deferred)).toEqual([
      "/k/a.md",
      "/k/b.md",
      "/k/c.md",
    ]);
  });

  it("treats a future compile time as young and a zero minimum age as every artifact", () => {
    const entries = { "/k/a.md": { compiledAt: daysAgo(-5) }, "/k/b.md": { compiledAt: daysAgo(1) } };
    expect(paths(plan(entries).selected)).toEqual([]);
    expect(paths(plan(entries, { budget: { minAgeDays: 0, maxSources: 5 } }).selected)).toEqual(["/k/b.md"]);
  });

  it("refuses budgets and clocks outside its contract", () => {
    const bad: Partial<MaintenanceInput>[] = [
      { budget: { maxSources: -1 } },
      { budget: { maxSources: 1.5 } },
      { budget: { maxBytes: Number.POSITIVE_INFINITY } },
      { budget: { minAgeDays: Number.NaN } },
      { now: Number.NaN },
    ];
    for (const fields of bad) expect(rejection(() => plan({ "/k/a.md": {} }, fields)).code).toBe("invalid-plan-input");
  });

  it("leaves every input untouched", () => {
    const sources = new Map([["/k/a.md", { hash: H1, bytes: 5 }]]);
    const artifacts = { "/k/a.md": { description: "d" } };
    const provenance = emptyProvenance();
    const input = { root: K, sources, artifacts, provenance, now: NOW };
    const before = structuredClone(input);
    expect(paths(planArtifactMaintenance(input).selected)).toEqual(["/k/a.md"]);
    expect(input).toEqual(before);
  });
});

// ---- property: against a naive reference --------------------------------------------------------

/** Timestamps with their meaning spelled out here, independently of core's parser. */
const STAMPS: [unknown, number | undefined][] = [
  [daysAgo(0), NOW],
  [daysAgo(29), NOW - 29 * DAY],
  [daysAgo(30), NOW - 30 * DAY],
  [daysAgo(31), NOW - 31 * DAY],
  [daysAgo(365), NOW - 365 * DAY],
  [daysAgo(-3), NOW + 3 * DAY],
  ["2026-01-01T00:00:00+01:00", Date.UTC(2025, 11, 31, 23)],
  ["2026-02-30T00:00:00Z", undefined],
  ["last week", undefined],
  [7, undefined],
  [null, undefined],
];
const GOOD_REVISION = "artifact-v1";
const PATHS = ["/k/a.md", "/k/b.md", "/k/n/c.md", "/k/\u00e9.md", "/k/\u{1F4A1}.md", "/k/\uff5e.md", "/x/d.md"];
const HASHES = [H1, H2];

const path = fc.constantFrom(...PATHS);
const stamp = fc.constantFrom(...STAMPS.map(([value]) => value));
const metaEntry = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.record(
      {
        sourceHash: fc.constantFrom<unknown>(H1, H2, "sha256:bad", 5),
        compilerRevision: fc.constantFrom<unknown>(GOOD_REVISION, GOOD_REVISION, "artifact-v0", "", null),
        compiledAt: stamp,
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(5, "x", [], null) },
);
const retired = fc.record(
  {
    hash: fc.constantFrom<unknown>(H1, H2, "bad"),
    compiler: fc.constantFrom<unknown>(GOOD_REVISION, "v0"),
    compiled_at: stamp,
  },
  { requiredKeys: [] },
);
const scenario = fc.record({
  sources: fc.dictionary(
    path,
    fc.record({ hash: fc.constantFrom(...HASHES), bytes: fc.constantFrom(0, 1, 100, 8000, 16384, 20000) }),
  ),
  artifacts: fc.dictionary(path, retired),
  meta: fc.dictionary(path, metaEntry),
  section: fc.constantFrom("present", "present", "present", "present", "missing", "array", "version"),
  refresh: fc.subarray(PATHS),
  now: fc.constantFrom(NOW, NOW + 2 * DAY),
  budget: fc.record(
    {
      maxSources: fc.constantFrom(0, 1, 2, 10),
      maxBytes: fc.constantFrom(0, 1, 100, 16384, 100000),
      minAgeDays: fc.constantFrom(0, 1, 30, 365),
    },
    { requiredKeys: [] },
  ),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

const own = (value: object, key: string) => Object.prototype.hasOwnProperty.call(value, key);
const plain = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function metaDocument(s: Scenario): unknown {
  if (s.section === "missing") return { version: 1 };
  if (s.section === "array") return { version: 1, artifacts: [] };
  return { version: s.section === "version" ? 2 : 1, artifacts: s.meta };
}

type Field = "ok" | "missing" | "bad";

/** The naive rule: everything computed again from the raw generated documents. */
function naivePlan(s: Scenario) {
  const budget = { maxSources: 1, maxBytes: 16384, minAgeDays: 30, ...s.budget };
  const broken = s.section === "array" || s.section === "version";
  const field = (path: string, name: string, retiredName: string, ok: (v: unknown) => boolean): [Field, unknown] => {
    if (broken) return ["bad", undefined];
    if (s.section === "present" && own(s.meta, path)) {
      const entry = s.meta[path];
      if (!plain(entry)) return ["bad", undefined];
      if (own(entry, name)) return ok(entry[name]) ? ["ok", entry[name]] : ["bad", undefined];
    }
    const artifact = s.artifacts[path]!;
    if (own(artifact, retiredName)) {
      const value = (artifact as Record<string, unknown>)[retiredName];
      return ok(value) ? ["ok", value] : ["bad", undefined];
    }
    return ["missing", undefined];
  };
  const stampMs = (value: unknown) => STAMPS.find(([v]) => v === value)?.[1];
  const invalid = new Set<string>();
  for (const path of Object.keys(s.sources)) {
    if (!own(s.artifacts, path)) {
      invalid.add(path);
      continue;
    }
    const [hs, hv] = field(path, "sourceHash", "hash", (v) => v === H1 || v === H2);
    const [cs, cv] = field(path, "compilerRevision", "compiler", (v) => typeof v === "string" && v.length > 0);
    if (hs === "ok" && hv !== s.sources[path]!.hash) invalid.add(path);
    if (hs === "bad" || cs === "bad") invalid.add(path);
    if (cs === "ok" && cv !== GOOD_REVISION) invalid.add(path);
    if (s.refresh.includes(path)) invalid.add(path);
  }
  const candidates: { path: string; bytes: number; compiledAt: string | null; at: number | undefined }[] = [];
  for (const path of Object.keys(s.sources)) {
    if (invalid.has(path)) continue;
    const [ts, tv] = field(path, "compiledAt", "compiled_at", (v) => stampMs(v) !== undefined);
    const at = ts === "ok" ? stampMs(tv) : undefined;
    if (at !== undefined && s.now - at < budget.minAgeDays * DAY) continue;
    candidates.push({ path, bytes: s.sources[path]!.bytes, compiledAt: at === undefined ? null : (tv as string), at });
  }
  candidates.sort((a, b) => {
    const ka = a.at === undefined ? -Infinity : a.at;
    const kb = b.at === undefined ? -Infinity : b.at;
    if (ka !== kb) return ka < kb ? -1 : 1;
    return comparePaths(a.path, b.path);
  });
  const selected: unknown[] = [];
  const deferred: unknown[] = [];
  let used = 0;
  for (const { path, bytes, compiledAt } of candidates) {
    const fits = selected.length < budget.maxSources && used + bytes <= budget.maxBytes;
    (fits ? selected : deferred).push({ path, bytes, compiledAt });
    if (fits) used += bytes;
  }
  return { selected, deferred, invalid };
}

describe("planArtifactMaintenance property", () => {
  it("agrees with a naive reference and holds its ceilings", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const artifacts = Object.fromEntries(
          Object.entries(s.artifacts).map(([p, extra]) => [p, { description: "d", ...extra }]),
        ) as JsonObject;
        const input: MaintenanceInput = {
          root: K,
          sources: new Map(Object.entries(s.sources)),
          artifacts,
          provenance: parseProvenance(metaDocument(s)),
          refresh: s.refresh,
          now: s.now,
          budget: s.budget as MaintenanceBudget,
        };
        const result = planArtifactMaintenance(input);
        const expected = naivePlan({ ...s, artifacts: artifacts as never });
        expect(result.selected).toEqual(expected.selected);
        expect(result.deferred).toEqual(expected.deferred);
        const invalidations = planArtifactInvalidations(input).invalidations.map((i) => i.path);
        expect(new Set(invalidations)).toEqual(expected.invalid);
        const limits = { ...MAINTENANCE_DEFAULTS, ...s.budget };
        expect(result.selected.length).toBeLessThanOrEqual(limits.maxSources);
        expect(result.selected.reduce((n, c) => n + c.bytes, 0)).toBeLessThanOrEqual(limits.maxBytes);
        for (const c of result.selected) expect(invalidations).not.toContain(c.path);
      }),
      { numRuns: 3000 },
    );
  });
});
