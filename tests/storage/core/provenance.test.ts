import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import {
  parseScopeMeta,
  serializeRuntimeMeta,
  serializeScopeMeta,
  type RuntimeMeta,
} from "../../../storage/core/codec.ts";
import {
  ARTIFACT_COMPILER_REVISION,
  decodeProvenance,
  emptyProvenance,
  encodeProvenanceArtifacts,
  isSourceHash,
  parseProvenance,
  parseTimestamp,
  provenanceEvidence,
  pruneProvenance,
  recordProvenance,
  serializeProvenance,
} from "../../../storage/core/provenance.ts";

const H1 = `sha256:${"1".repeat(64)}`;
const H2 = `sha256:${"2".repeat(64)}`;

describe("parseTimestamp / isSourceHash", () => {
  it("reads ISO 8601 date-times with seconds and a zone, range-checking the calendar", () => {
    expect(parseTimestamp("2026-01-31T12:00:00.000Z")).toBe(Date.UTC(2026, 0, 31, 12));
    expect(parseTimestamp("2026-01-31T14:00:00+02:00")).toBe(Date.UTC(2026, 0, 31, 12));
    expect(parseTimestamp("2024-02-29T00:00:00Z")).toBe(Date.UTC(2024, 1, 29));
    for (const bad of ["2025-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01", "x"]) {
      expect(parseTimestamp(bad)).toBeUndefined();
    }
    expect(parseTimestamp("2026-01-01T00:00Z")).toBeUndefined();
  });

  it("knows the one source hash form", () => {
    expect(isSourceHash(H1)).toBe(true);
    expect(isSourceHash(`sha256:${"A".repeat(64)}`)).toBe(false);
    expect(isSourceHash("1".repeat(64))).toBe(false);
    expect(isSourceHash(5)).toBe(false);
  });
});

describe("parseProvenance", () => {
  it("reads 001's shape and reports each field's evidence", () => {
    const section = parseProvenance({
      version: 1,
      artifacts: { "/k/a.md": { sourceHash: H1, compilerRevision: "artifact-v1", compiledAt: "2026-01-01T00:00:00Z" } },
    });
    expect(section.status).toBe("present");
    expect(provenanceEvidence(section, "/k/a.md")).toEqual({
      sourceHash: { status: "valid", value: H1, from: "meta" },
      compilerRevision: { status: "valid", value: "artifact-v1", from: "meta" },
      compiledAt: { status: "valid", value: "2026-01-01T00:00:00Z", from: "meta" },
    });
    expect(provenanceEvidence(section, "/k/other.md")).toEqual({
      sourceHash: { status: "missing" },
      compilerRevision: { status: "missing" },
      compiledAt: { status: "missing" },
    });
  });

  it("degrades per field: one malformed value fails only its own capability", () => {
    const section = parseProvenance({
      version: 1,
      artifacts: {
        "/k/a.md": { sourceHash: "sha256:XYZ", compilerRevision: "artifact-v1" },
        "/k/b.md": { sourceHash: H1, compilerRevision: "", compiledAt: "yesterday" },
        "/k/c.md": { sourceHash: H2, compilerRevision: null },
        "/k/d.md": 5,
      },
    });
    const a = provenanceEvidence(section, "/k/a.md");
    expect(a.sourceHash).toEqual({
      status: "malformed",
      reason: "sourceHash must be sha256:<64 lowercase hex characters>",
      from: "meta",
    });
    expect(a.compilerRevision.status).toBe("valid");
    expect(a.compiledAt.status).toBe("missing");
    const b = provenanceEvidence(section, "/k/b.md");
    expect([b.sourceHash.status, b.compilerRevision.status, b.compiledAt.status]).toEqual([
      "valid",
      "malformed",
      "malformed",
    ]);
    expect(provenanceEvidence(section, "/k/c.md").compilerRevision.status).toBe("malformed");
    const d = provenanceEvidence(section, "/k/d.md");
    expect(d.sourceHash).toEqual({
      status: "malformed",
      reason: "the provenance entry is not an object",
      from: "meta",
    });
  });

  it("treats no file and no artifacts member as missing evidence, never an error", () => {
    expect(decodeProvenance(null)).toEqual(emptyProvenance());
    expect(parseProvenance({ version: 1, kind: "global" }).status).toBe("missing");
    expect(parseProvenance(undefined).status).toBe("missing");
  });

  it("marks an unreadable section malformed as a whole, failing every field closed", () => {
    const cases: [unknown, string][] = [
      [{ version: 1, artifacts: [] }, "the artifacts section is not an object keyed by source path"],
      [{ version: 2, artifacts: {} }, "meta.json version 2 is not 1"],
      [{ artifacts: {} }, "meta.json version undefined is not 1"],
      [[1], "meta.json is not a JSON object"],
      [{ version: 1, artifacts: { "/a.md": { n: Number.NaN } } }, "the artifacts section is not plain JSON"],
    ];
    for (const [document, problem] of cases) {
      const section = parseProvenance(document);
      expect(section.status).toBe("malformed");
      expect(section.problem).toBe(problem);
      const evidence = provenanceEvidence(section, "/a.md", { description: "d", hash: H1 });
      expect(evidence.sourceHash).toEqual({ status: "malformed", reason: problem, from: "meta" });
      expect(evidence.compiledAt.status).toBe("malformed");
    }
    expect(decodeProvenance("{").problem).toBe("meta.json is not valid JSON");
    expect(decodeProvenance(new Uint8Array([0xff])).problem).toBe("meta.json is not valid UTF-8");
  });

  it("falls back to retired embedded fields only where meta.json holds nothing for a field", () => {
    const section = parseProvenance({ version: 1, artifacts: { "/a.md": { compilerRevision: "artifact-v1" } } });
    const artifact = { description: "d", hash: H1, compiler: "old", compiled_at: "bad" };
    expect(provenanceEvidence(section, "/a.md", artifact)).toEqual({
      sourceHash: { status: "valid", value: H1, from: "retired" },
      compilerRevision: { status: "valid", value: "artifact-v1", from: "meta" },
      compiledAt: {
        status: "malformed",
        reason: "compiled_at must be an ISO 8601 timestamp with seconds and zone, e.g. 2026-01-31T12:00:00.000Z",
        from: "retired",
      },
    });
    expect(
      provenanceEvidence(emptyProvenance(), "/b.md", { description: "d", compiler: "v0" }).compilerRevision,
    ).toEqual({ status: "valid", value: "v0", from: "retired" });
  });

  it("reads the artifacts section of today's session and scope meta.json documents", () => {
    const meta: RuntimeMeta = {
      version: 1,
      kind: "session",
      identity: { cwd: "/w/p", cwdKey: "--w-p--", sessionId: "u", sessionKey: "2026_u" },
      lineage: { id: "L", originStep: 0, window: [] },
      counters: { transitions: 0, runs: 0 },
      revision: "self",
      publication: { intent: "unconfirmed" },
      artifacts: { "/k/a.md": { sourceHash: H1, compilerRevision: "artifact-v1" } },
    };
    const evidence = provenanceEvidence(decodeProvenance(serializeRuntimeMeta(meta)), "/k/a.md");
    expect(evidence.sourceHash).toEqual({ status: "valid", value: H1, from: "meta" });
    const scopeBytes = serializeScopeMeta({ version: 1, kind: "global", artifacts: {} });
    const recorded = recordProvenance(decodeProvenance(scopeBytes), "/k/a.md", { sourceHash: H2 });
    const embedded = { ...parseScopeMeta(scopeBytes), artifacts: encodeProvenanceArtifacts(recorded) as never };
    expect(parseScopeMeta(serializeScopeMeta(embedded)).artifacts).toEqual({
      "/k/a.md": { sourceHash: H2, compilerRevision: "artifact-v1" },
    });
  });
});

describe("recordProvenance / pruneProvenance", () => {
  it("records a complete replacement entry, defaulting the compiler revision, without touching the input", () => {
    const before = parseProvenance({
      version: 1,
      artifacts: { "/a.md": { sourceHash: H1, compilerRevision: "old", compiledAt: "2020-01-01T00:00:00Z", x: 1 } },
    });
    const after = recordProvenance(before, "/a.md", { sourceHash: H2 });
    expect(after.entries.get("/a.md")).toEqual({ sourceHash: H2, compilerRevision: ARTIFACT_COMPILER_REVISION });
    expect(before.entries.get("/a.md")).toMatchObject({ sourceHash: H1, x: 1 });
    const timed = recordProvenance(emptyProvenance(), "/b.md", {
      sourceHash: H1,
      compilerRevision: "skill-artifact-v1",
      compiledAt: "2026-03-01T10:00:00.000Z",
    });
    expect(timed.status).toBe("present");
    expect(timed.entries.get("/b.md")).toEqual({
      sourceHash: H1,
      compilerRevision: "skill-artifact-v1",
      compiledAt: "2026-03-01T10:00:00.000Z",
    });
  });

  it("a migrated record may be unverified, with or without the hash it carried", () => {
    const carried = recordProvenance(emptyProvenance(), "/s.md", { sourceHash: H1, unverified: true });
    expect(carried.entries.get("/s.md")).toEqual({
      sourceHash: H1,
      compilerRevision: ARTIFACT_COMPILER_REVISION,
      unverified: true,
    });
    const bare = recordProvenance(emptyProvenance(), "/s.md", {
      compilerRevision: "skill-artifact-v1",
      unverified: true,
    });
    expect(bare.entries.get("/s.md")).toEqual({ compilerRevision: "skill-artifact-v1", unverified: true });
    expect(provenanceEvidence(bare, "/s.md").sourceHash).toEqual({ status: "missing" });
  });

  it("refuses malformed records with invalid-provenance", () => {
    const bad: [string, object, RegExp][] = [
      ["/a.md", { sourceHash: "sha256:1" }, /^\/a\.md: sourceHash must be sha256:<64 lowercase hex/],
      ["/a.md", { sourceHash: H1, compilerRevision: "" }, /compilerRevision must be a non-empty compiler revision/],
      ["/a.md", { sourceHash: H1, compiledAt: "now" }, /compiledAt must be an ISO 8601 timestamp/],
      ["", { sourceHash: H1 }, /an artifact path must be a non-empty string/],
      ["/a.md", {}, /sourceHash is required: only an unverified \(migrated\) record may lack it/],
      ["/a.md", { sourceHash: H1, unverified: false }, /unverified must be true when present/],
    ];
    for (const [path, record, message] of bad) {
      const error = rejection(() => recordProvenance(emptyProvenance(), path, record as never));
      expect(error.code).toBe("invalid-provenance");
      expect(error.message).toMatch(message);
    }
  });

  it("never launders another path's malformed evidence while updating one path", () => {
    const section = parseProvenance({ version: 1, artifacts: { "/bad.md": { sourceHash: "garbage" } } });
    const updated = pruneProvenance(recordProvenance(section, "/a.md", { sourceHash: H1 }), ["/a.md"]);
    expect(provenanceEvidence(updated, "/bad.md").sourceHash.status).toBe("malformed");
    expect(encodeProvenanceArtifacts(updated)).toEqual({ "/bad.md": { sourceHash: "garbage" } });
  });

  it("refuses to record into a section unreadable as a whole, and prunes it as a no-op", () => {
    const section = parseProvenance({ version: 1, artifacts: "oops" });
    const error = rejection(() => recordProvenance(section, "/a.md", { sourceHash: H1 }));
    expect(error.code).toBe("invalid-provenance");
    expect(error.message).toMatch(/restore meta\.json \(e\.g\. from Git\) or remove its artifacts member/);
    expect(pruneProvenance(section, ["/a.md"])).toBe(section);
    expect(encodeProvenanceArtifacts(section)).toBe("oops");
    expect(rejection(() => encodeProvenanceArtifacts(decodeProvenance("{"))).code).toBe("invalid-provenance");
  });

  it("prunes the given paths and returns the same section when nothing changes", () => {
    const section = recordProvenance(recordProvenance(emptyProvenance(), "/a.md", { sourceHash: H1 }), "/b.md", {
      sourceHash: H2,
    });
    expect([...pruneProvenance(section, ["/a.md", "/gone.md"]).entries.keys()]).toEqual(["/b.md"]);
    expect(pruneProvenance(section, ["/gone.md"])).toBe(section);
  });
});

describe("serializeProvenance", () => {
  it("writes 001's document canonically: sorted keys, equal content means equal bytes", () => {
    const one = recordProvenance(recordProvenance(emptyProvenance(), "/z.md", { sourceHash: H1 }), "/a.md", {
      sourceHash: H2,
      compiledAt: "2026-01-01T00:00:00Z",
    });
    const two = recordProvenance(
      recordProvenance(emptyProvenance(), "/a.md", { sourceHash: H2, compiledAt: "2026-01-01T00:00:00Z" }),
      "/z.md",
      {
        sourceHash: H1,
      },
    );
    const bytes = serializeProvenance(one);
    expect(serializeProvenance(two)).toBe(bytes);
    expect(JSON.parse(bytes)).toEqual({
      version: 1,
      artifacts: {
        "/a.md": { sourceHash: H2, compilerRevision: "artifact-v1", compiledAt: "2026-01-01T00:00:00Z" },
        "/z.md": { sourceHash: H1, compilerRevision: "artifact-v1" },
      },
    });
    expect(bytes.indexOf('"/a.md"')).toBeLessThan(bytes.indexOf('"/z.md"'));
    expect(bytes.endsWith("}\n")).toBe(true);
    expect(serializeProvenance(decodeProvenance(bytes))).toBe(bytes);
    expect(serializeProvenance(emptyProvenance())).toBe('{\n  "artifacts": {},\n  "version": 1\n}\n');
  });

  it("keeps __proto__ paths as plain data through a round trip", () => {
    const section = recordProvenance(emptyProvenance(), "__proto__", { sourceHash: H1 });
    const again = decodeProvenance(serializeProvenance(section));
    expect(provenanceEvidence(again, "__proto__").sourceHash).toEqual({ status: "valid", value: H1, from: "meta" });
  });
});
