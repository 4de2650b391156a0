import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import {
  INVALIDATION_REASONS,
  isKnowledgeSourcePath,
  planArtifactInvalidations,
  type DiscoveredSource,
  type FreshnessInput,
} from "../../../storage/core/invalidation.ts";
import type { JsonObject } from "../../../storage/core/json.ts";
import { emptyProvenance, parseProvenance } from "../../../storage/core/provenance.ts";

const K = "/home/u/.pi/agent/knowledge";
const H1 = `sha256:${"1".repeat(64)}`;
const H2 = `sha256:${"2".repeat(64)}`;

function sources(entries: Record<string, string>): Map<string, DiscoveredSource> {
  return new Map(Object.entries(entries).map(([path, hash]) => [path, { hash, bytes: 10 }]));
}

function input(fields: Partial<FreshnessInput>): FreshnessInput {
  return { root: K, sources: new Map(), artifacts: {}, provenance: emptyProvenance(), ...fields };
}

const art = (extra: JsonObject = {}): JsonObject => ({ description: "d", ...extra });

describe("isKnowledgeSourcePath", () => {
  it("accepts ordinary lowercase .md paths beneath the root only", () => {
    expect(isKnowledgeSourcePath(K, `${K}/a.md`)).toBe(true);
    expect(isKnowledgeSourcePath(`${K}/`, `${K}/n/b.md`)).toBe(true);
    for (const path of [`${K}/a.MD`, `${K}/a.txt`, `${K}x/a.md`, `${K}/../a.md`, `${K}//a.md`, "/other/a.md", K]) {
      expect(isKnowledgeSourcePath(K, path)).toBe(false);
    }
  });
});

describe("planArtifactInvalidations", () => {
  it("lists new, changed, compiler-stale, malformed and refreshed sources in path byte order", () => {
    const plan = planArtifactInvalidations(
      input({
        sources: sources({
          [`${K}/new.md`]: H1,
          [`${K}/changed.md`]: H2,
          [`${K}/stale.md`]: H1,
          [`${K}/malformed.md`]: H1,
          [`${K}/refresh.md`]: H1,
          [`${K}/fresh.md`]: H1,
          [`${K}/unknown.md`]: H1,
        }),
        artifacts: {
          [`${K}/changed.md`]: art(),
          [`${K}/stale.md`]: art(),
          [`${K}/malformed.md`]: art(),
          [`${K}/refresh.md`]: art(),
          [`${K}/fresh.md`]: art(),
          [`${K}/unknown.md`]: art(),
        },
        provenance: parseProvenance({
          version: 1,
          artifacts: {
            [`${K}/changed.md`]: { sourceHash: H1, compilerRevision: "artifact-v1" },
            [`${K}/stale.md`]: { sourceHash: H1, compilerRevision: "artifact-v0" },
            [`${K}/malformed.md`]: { sourceHash: "sha256:nope", compilerRevision: "artifact-v1" },
            [`${K}/refresh.md`]: { sourceHash: H1, compilerRevision: "artifact-v1" },
            [`${K}/fresh.md`]: { sourceHash: H1, compilerRevision: "artifact-v1", compiledAt: "bad" },
          },
        }),
        refresh: [`${K}/refresh.md`, `${K}/absent.md`],
      }),
    );
    expect(plan.invalidations).toEqual([
      { path: `${K}/changed.md`, reason: "changed" },
      { path: `${K}/malformed.md`, reason: "malformed" },
      { path: `${K}/new.md`, reason: "new" },
      { path: `${K}/refresh.md`, reason: "refresh" },
      { path: `${K}/stale.md`, reason: "compiler-stale" },
    ]);
    expect(plan.removed).toEqual([]);
    expect(plan.prune).toEqual([]);
  });

  it("reports the first reason in precedence order when several apply", () => {
    expect(INVALIDATION_REASONS).toEqual(["new", "changed", "malformed", "compiler-stale", "refresh"]);
    const path = `${K}/a.md`;
    const plan = (entry: object) =>
      planArtifactInvalidations(
        input({
          sources: sources({ [path]: H2 }),
          artifacts: { [path]: art() },
          provenance: parseProvenance({ version: 1, artifacts: { [path]: entry } }),
          refresh: [path],
        }),
      ).invalidations[0]!.reason;
    expect(plan({ sourceHash: H1, compilerRevision: "" })).toBe("changed");
    expect(plan({ sourceHash: 7, compilerRevision: "v0" })).toBe("malformed");
    expect(plan({ sourceHash: H2, compilerRevision: 7 })).toBe("malformed");
    expect(plan({ sourceHash: H2, compilerRevision: "v0" })).toBe("compiler-stale");
    expect(plan({ sourceHash: H2, compilerRevision: "artifact-v1" })).toBe("refresh");
  });

  it("leaves artifacts of unknown freshness usable: missing evidence invalidates nothing", () => {
    const path = `${K}/a.md`;
    const plan = planArtifactInvalidations(input({ sources: sources({ [path]: H1 }), artifacts: { [path]: art() } }));
    expect(plan).toEqual({ invalidations: [], removed: [], prune: [] });
  });

  it("reads retired embedded evidence where meta.json has none", () => {
    const path = `${K}/a.md`;
    const plan = planArtifactInvalidations(
      input({ sources: sources({ [path]: H2 }), artifacts: { [path]: art({ hash: H1 }) } }),
    );
    expect(plan.invalidations).toEqual([{ path, reason: "changed" }]);
  });

  it("fails every artifact closed when the section is unreadable as a whole, but new stays new", () => {
    const plan = planArtifactInvalidations(
      input({
        sources: sources({ [`${K}/a.md`]: H1, [`${K}/b.md`]: H1 }),
        artifacts: { [`${K}/a.md`]: art() },
        provenance: parseProvenance({ version: 1, artifacts: [] }),
      }),
    );
    expect(plan.invalidations).toEqual([
      { path: `${K}/a.md`, reason: "malformed" },
      { path: `${K}/b.md`, reason: "new" },
    ]);
  });

  it("honours another current compiler revision", () => {
    const path = `${K}/SKILL.md`;
    const plan = planArtifactInvalidations(
      input({
        sources: sources({ [path]: H1 }),
        artifacts: { [path]: art() },
        provenance: parseProvenance({
          version: 1,
          artifacts: { [path]: { sourceHash: H1, compilerRevision: "artifact-v1" } },
        }),
        compilerRevision: "skill-artifact-v1",
      }),
    );
    expect(plan.invalidations).toEqual([{ path, reason: "compiler-stale" }]);
  });

  it("removes artifacts whose Knowledge source is gone and prunes their provenance and orphans", () => {
    const plan = planArtifactInvalidations(
      input({
        sources: sources({ [`${K}/kept.md`]: H1 }),
        artifacts: {
          [`${K}/z-gone.md`]: art(),
          [`${K}/gone.md`]: art(),
          [`${K}/kept.md`]: art(),
          "/repo/README.md": art(),
          [`${K}/notes.txt`]: art(),
        },
        provenance: parseProvenance({
          version: 1,
          artifacts: {
            [`${K}/gone.md`]: { sourceHash: H1 },
            [`${K}/deleted.md`]: { sourceHash: H1 },
            "/repo/README.md": { sourceHash: H1 },
          },
        }),
        refresh: [`${K}/gone.md`],
      }),
    );
    expect(plan.invalidations).toEqual([]);
    expect(plan.removed).toEqual([`${K}/gone.md`, `${K}/z-gone.md`]);
    expect(plan.prune).toEqual([`${K}/deleted.md`, `${K}/gone.md`, `${K}/z-gone.md`]);
  });

  it("gives equal plans for equal inputs in any insertion order", () => {
    const paths = [`${K}/\u{1F4A1}.md`, `${K}/\uff5e.md`, `${K}/b.md`, `${K}/a.md`];
    const forward = planArtifactInvalidations(
      input({ sources: sources(Object.fromEntries(paths.map((p) => [p, H1]))) }),
    );
    const backward = planArtifactInvalidations(
      input({ sources: sources(Object.fromEntries([...paths].reverse().map((p) => [p, H1]))) }),
    );
    expect(backward).toEqual(forward);
    expect(forward.invalidations.map((i) => i.path)).toEqual([
      `${K}/a.md`,
      `${K}/b.md`,
      `${K}/\uff5e.md`,
      `${K}/\u{1F4A1}.md`,
    ]);
  });

  it("refuses garbled discovery observations with invalid-plan-input", () => {
    const bad: [Partial<FreshnessInput>, RegExp][] = [
      [{ sources: new Map([[`${K}/a.md`, { hash: "abc", bytes: 1 }]]) }, /discovered hash must be sha256:/],
      [{ sources: new Map([[`${K}/a.md`, { hash: H1, bytes: -1 }]]) }, /byte count must be a non-negative integer/],
      [{ sources: new Map([[`${K}/a.md`, { hash: H1, bytes: 1.5 }]]) }, /byte count must be a non-negative integer/],
      [{ root: "" }, /root must be the non-empty source root/],
      [{ compilerRevision: "" }, /compilerRevision must be a non-empty string/],
    ];
    for (const [fields, message] of bad) {
      const error = rejection(() => planArtifactInvalidations(input(fields)));
      expect(error.code).toBe("invalid-plan-input");
      expect(error.message).toMatch(message);
    }
  });
});
