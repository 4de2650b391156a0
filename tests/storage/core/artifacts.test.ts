import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import {
  assertNoForgedProvenance,
  checkArtifact,
  compareSourcePaths,
  projectArtifacts,
  selectArtifactsByTags,
  type TagMatch,
} from "../../../storage/core/artifacts.ts";
import type { JsonObject } from "../../../storage/core/json.ts";
import { comparePaths } from "../../../storage/layout.ts";

const at = 'cwd.artifacts["/k/a.md"]';

describe("checkArtifact", () => {
  it("accepts a description alone, optional fields when well formed, and any other JSON metadata", () => {
    expect(() => checkArtifact({ description: "notes" }, at)).not.toThrow();
    const rich = { description: "d", kind: "skill", compilation: { rules: ["r"] }, tags: ["a", "b"], extra: [1] };
    expect(() => checkArtifact(rich, at)).not.toThrow();
  });

  it("names the source path and the field, and says what to write instead", () => {
    const cases: [unknown, string, RegExp][] = [
      [{}, "description", /is missing; every artifact needs a non-empty description .* e\.g\. \{"description":/],
      [{ description: "  " }, "description", /must be a non-empty description .*not blank/],
      [{ description: 5 }, "description", /must be a non-empty description .*e\.g\./],
      [{ description: "d", kind: "" }, "kind", /must be a non-empty string such as "skill"; omit kind/],
      [{ description: "d", compilation: [] }, "compilation", /must be an object .*e\.g\. \{\}; omit it/],
      [{ description: "d", tags: "a" }, "tags", /must be an array of unique, non-empty, trimmed strings such as/],
      [{ description: "d", tags: ["a", "a"] }, "tags", /must not repeat a tag \("a" appears more than once\)/],
      [{ description: "d", tags: ["a", " b"] }, "tags[1]", /must be a non-empty trimmed string such as "auth"/],
      [{ description: "d", tags: [""] }, "tags[0]", /must be a non-empty trimmed string/],
    ];
    for (const [value, field, message] of cases) {
      const error = rejection(() => checkArtifact(value, at));
      expect(error.code).toBe("invalid-artifact");
      expect(error.path).toBe(`${at}.${field}`);
      expect(error.message.slice(error.path!.length + 2)).toMatch(message);
    }
  });

  it("refuses an entry that is not an object, with an example", () => {
    for (const value of [5, "notes", [], true]) {
      const error = rejection(() => checkArtifact(value, at));
      expect(error.code).toBe("invalid-artifact");
      expect(error.path).toBe(at);
      expect(error.message).toMatch(/must be an object with a non-empty description, e\.g\. \{"description":/);
    }
  });
});

describe("assertNoForgedProvenance", () => {
  it.each(["sourceHash", "compilerRevision", "compiledAt", "hash", "compiler", "compiled_at"])(
    "refuses %s set by a model-authored patch, saying the runtime records provenance",
    (field) => {
      const error = rejection(() =>
        assertNoForgedProvenance({ "/k/a.md": { description: "d", [field]: "x" } }, "global.artifacts"),
      );
      expect(error.code).toBe("forged-provenance");
      expect(error.path).toBe(`global.artifacts["/k/a.md"].${field}`);
      expect(error.message).toMatch(/the runtime records the source hash, compiler revision and compile time itself/);
      expect(error.message).toMatch(/Remove it/);
    },
  );

  it("allows deleting entries and provenance members (null asserts nothing) and ordinary metadata", () => {
    expect(() =>
      assertNoForgedProvenance(
        { "/a.md": null, "/b.md": { hash: null, sourceHash: null }, "/c.md": { description: "d", source: "x" } },
        "global.artifacts",
      ),
    ).not.toThrow();
  });

  it("looks only at an entry's own top-level fields, not inside compilation", () => {
    expect(() =>
      assertNoForgedProvenance({ "/a.md": { compilation: { sourceHash: "x" } } }, "global.artifacts"),
    ).not.toThrow();
  });
});

describe("projectArtifacts", () => {
  it("strips retired embedded provenance and shares untouched entries", () => {
    const clean = { description: "keep", tags: ["t"] };
    const artifacts: JsonObject = {
      "/a.md": { description: "a", hash: "sha256:00", compiler: "v0", compiled_at: "2020-01-01T00:00:00Z", x: 1 },
      "/b.md": clean,
    };
    const before = structuredClone(artifacts);
    const projected = projectArtifacts(artifacts);
    expect(projected).toEqual({ "/a.md": { description: "a", x: 1 }, "/b.md": clean });
    expect(projected["/b.md"]).toBe(clean);
    expect(artifacts).toEqual(before);
  });

  it("keeps __proto__ keys as plain data", () => {
    const artifacts = JSON.parse('{"__proto__":{"description":"d","hash":"h","__proto__":{"n":1}}}');
    const projected = projectArtifacts(artifacts);
    expect(Object.keys(projected)).toEqual(["__proto__"]);
    expect(Object.keys(projected["__proto__"] as object)).toEqual(["description", "__proto__"]);
  });
});

describe("compareSourcePaths", () => {
  it("orders by UTF-8 bytes, not UTF-16 code units", () => {
    // U+FF5E is one UTF-16 unit above the surrogates but its UTF-8 bytes sort below U+1F4A1's.
    expect(["/\u{1F4A1}.md", "/\uff5e.md", "/b.md", "/a.md", "/a"].sort(compareSourcePaths)).toEqual([
      "/a",
      "/a.md",
      "/b.md",
      "/\uff5e.md",
      "/\u{1F4A1}.md",
    ]);
  });

  it("agrees in sign with the store's comparePaths on arbitrary strings, and is total", () => {
    const unit = fc.oneof(
      fc.constantFrom("a", "/", "\ud800", "\udc00", "\ufffd", "\u{1F4A1}", "\uff5e"),
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
    );
    const binary = fc.string({ unit, maxLength: 8 });
    fc.assert(
      fc.property(binary, binary, (a, b) => {
        const ours = compareSourcePaths(a, b);
        const store = Math.sign(comparePaths(a, b));
        if (store !== 0) expect(ours).toBe(store);
        expect(ours === 0).toBe(a === b);
        expect(Math.sign(compareSourcePaths(b, a)) + ours).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("selectArtifactsByTags", () => {
  const artifacts: JsonObject = {
    "/k/z.md": { description: "z", tags: ["api", "auth"] },
    "/k/b.md": { description: "b", tags: ["api"] },
    "/k/a.md": { description: "a" },
    "/k/c.md": { description: "c", tags: ["auth"] },
  };

  it("filters all/any deterministically in path byte order", () => {
    expect(selectArtifactsByTags(artifacts, ["api", "auth"], "all")).toEqual(["/k/z.md"]);
    expect(selectArtifactsByTags(artifacts, ["api", "auth"], "any")).toEqual(["/k/b.md", "/k/c.md", "/k/z.md"]);
    expect(selectArtifactsByTags(artifacts, ["api", "api"], "all")).toEqual(["/k/b.md", "/k/z.md"]);
  });

  it("treats an empty request as vacuous: all matches everything, any matches nothing", () => {
    expect(selectArtifactsByTags(artifacts, [], "all")).toEqual(["/k/a.md", "/k/b.md", "/k/c.md", "/k/z.md"]);
    expect(selectArtifactsByTags(artifacts, [], "any")).toEqual([]);
  });

  it("a match only names candidates: no source is read, so a missing or changed one is selected alike", () => {
    const dir = mkdtempSync(join(tmpdir(), "sf-tags-"));
    try {
      const present = join(dir, "present.md");
      const missing = join(dir, "missing.md");
      writeFileSync(present, "# v1\n");
      const tagged: JsonObject = {
        [present]: { description: "p", tags: ["api"] },
        [missing]: { description: "m", tags: ["api"] },
        [join(dir, "other.md")]: { description: "o", tags: ["db"] },
      };
      const before = structuredClone(tagged);
      const first = selectArtifactsByTags(tagged, ["api"], "any");
      // Were a match to acquire its source, the missing file would throw or drop out, and the changed one
      // would be hashed anew.
      expect(first).toEqual([missing, present]);
      writeFileSync(present, "# v2, changed\n");
      expect(selectArtifactsByTags(tagged, ["api"], "all")).toEqual(first);
      rmSync(present);
      expect(selectArtifactsByTags(tagged, ["api"], "any")).toEqual(first);
      expect(tagged, "no provenance stamped, nothing changed").toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses an unknown mode", () => {
    expect(rejection(() => selectArtifactsByTags(artifacts, ["a"], "some" as TagMatch)).code).toBe(
      "invalid-plan-input",
    );
  });

  // Property: the same answer as a naive filter sorted by the store's byte order.
  const paths = fc.constantFrom("/k/a.md", "/k/b.md", "/k/\u00e9.md", "/k/\u{1F4A1}.md", "/k/\uff5e.md", "__proto__");
  const tag = fc.constantFrom("api", "auth", "db", "ops");
  const entry = fc.record(
    { description: fc.constant("d"), tags: fc.uniqueArray(tag, { maxLength: 3 }) },
    { requiredKeys: ["description"] },
  );

  function naive(input: Record<string, { tags?: string[] }>, wanted: string[], mode: TagMatch): string[] {
    const out: string[] = [];
    for (const path of Object.keys(input)) {
      const own = input[path]!.tags ?? [];
      let hits = 0;
      for (const t of wanted) if (own.includes(t)) hits++;
      if (mode === "all" ? hits === wanted.length : hits > 0) out.push(path);
    }
    return out.sort(comparePaths);
  }

  it("matches a naive reference on generated artifacts", () => {
    fc.assert(
      fc.property(
        fc.dictionary(paths, entry, { maxKeys: 6 }),
        fc.array(tag, { maxLength: 3 }),
        fc.constantFrom<TagMatch>("all", "any"),
        (input, wanted, mode) => {
          const json = JSON.parse(JSON.stringify(input)) as JsonObject;
          const copy = structuredClone(json);
          expect(selectArtifactsByTags(json, wanted, mode)).toEqual(naive(json as never, [...new Set(wanted)], mode));
          expect(json).toEqual(copy);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
