// Semantic artifact entries (the `artifacts` field of every scope, keyed by exact source path):
// the shape a model-visible entry must have, the refusal of model-authored provenance, the model
// projection that hides retired embedded provenance, and deterministic tag selection.
//
// Why here and not in scope-state.ts: the artifact rules are read by the freshness planners and
// the projection as well as by scope validation, and they must stay one rule for all of them.

import * as v from "valibot";
import { StateFlowError, childPath, issuePath } from "./errors.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "./json.ts";
import { PROVENANCE_FIELDS, RETIRED_PROVENANCE_FIELDS } from "./provenance.ts";

const EXAMPLE = '{"description":"What this source contains and when it is useful"}';

const TagsSchema = v.pipe(
  v.array(
    v.pipe(
      v.string('must be a non-empty trimmed string such as "auth"'),
      v.check((tag) => tag.length > 0 && tag.trim() === tag, 'must be a non-empty trimmed string such as "auth"'),
    ),
    'must be an array of unique, non-empty, trimmed strings such as ["api","auth"]; omit tags when there are none',
  ),
  v.check(
    (tags) => new Set(tags).size === tags.length,
    (issue) => {
      const tags = issue.input as string[];
      const repeated = tags.find((tag, i) => tags.indexOf(tag) !== i);
      return `must not repeat a tag (${JSON.stringify(repeated)} appears more than once); list each tag once`;
    },
  ),
);

/**
 * A model-visible artifact: a non-empty description; kind, compilation and tags validated when
 * present; any other JSON metadata kept as is, so newer metadata stays forward-compatible.
 */
export const ArtifactSchema = v.looseObject({
  description: v.pipe(
    v.string(`must be a non-empty description of what the source holds and when it is useful, e.g. ${EXAMPLE}`),
    v.check(
      (d) => d.trim().length > 0,
      "must be a non-empty description of what the source holds and when it is useful, not blank",
    ),
  ),
  kind: v.optional(
    v.pipe(
      v.string('must be a non-empty string such as "skill"; omit kind for an ordinary artifact'),
      v.minLength(1, 'must be a non-empty string such as "skill"; omit kind for an ordinary artifact'),
    ),
  ),
  compilation: v.optional(
    v.custom<JsonObject>(
      (input) => typeof input === "object" && input !== null && !Array.isArray(input),
      "must be an object holding the compiled routing or operational content, e.g. {}; omit it when there is none",
    ),
  ),
  tags: v.optional(TagsSchema),
});

/**
 * Checks one materialized artifact entry. `path` names the entry (e.g. `cwd.artifacts["/k/a.md"]`),
 * so the error names the source path and the field. Throws `invalid-artifact`.
 */
export function checkArtifact(value: unknown, path: string): void {
  if (!isJsonObject(value as JsonValue)) {
    throw new StateFlowError(
      "invalid-artifact",
      `must be an object with a non-empty description, e.g. ${EXAMPLE}`,
      path,
    );
  }
  if (!Object.prototype.hasOwnProperty.call(value, "description")) {
    throw new StateFlowError(
      "invalid-artifact",
      `is missing; every artifact needs a non-empty description of what the source holds and when it is ` +
        `useful, e.g. ${EXAMPLE}`,
      childPath(path, "description"),
    );
  }
  const result = v.safeParse(ArtifactSchema, value);
  if (result.success) return;
  const issue = result.issues[0]!;
  throw new StateFlowError("invalid-artifact", issue.message, issuePath(path, issue));
}

/** Every field name a model-authored artifact may not set: the runtime's and the retired embedded ones. */
const OWNED_FIELDS: readonly string[] = [...PROVENANCE_FIELDS, ...Object.keys(RETIRED_PROVENANCE_FIELDS)];

/**
 * Refuses a model-authored `artifacts` patch whose entries set provenance fields. A `null` member
 * deletes rather than asserts, so it stays allowed (as does deleting a whole entry). Throws
 * `forged-provenance`. `path` names the patch's artifacts field, e.g. `global.artifacts`.
 */
export function assertNoForgedProvenance(artifacts: JsonObject, path: string): void {
  for (const source of Object.keys(artifacts)) {
    const entry = artifacts[source]!;
    if (!isJsonObject(entry)) continue;
    for (const field of OWNED_FIELDS) {
      if (!Object.prototype.hasOwnProperty.call(entry, field) || entry[field] === null) continue;
      const retired = !(PROVENANCE_FIELDS as readonly string[]).includes(field);
      throw new StateFlowError(
        "forged-provenance",
        `${retired ? "is a retired embedded provenance field" : "is runtime-owned provenance"}; the runtime ` +
          "records the source hash, compiler revision and compile time itself in scope metadata when you " +
          "read the source. Remove it and patch only description, kind, compilation, tags or other metadata",
        childPath(childPath(path, source), field),
      );
    }
  }
}

function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The artifacts map as the model sees it: provenance fields (the retired embedded ones, which old
 * state may still hold) are stripped, so freshness evidence never reaches the projected shape.
 * Entries without them are shared, not copied; the input is untouched.
 */
export function projectArtifacts(artifacts: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const source of Object.keys(artifacts)) {
    const entry = artifacts[source]!;
    if (!isJsonObject(entry) || !OWNED_FIELDS.some((f) => Object.prototype.hasOwnProperty.call(entry, f))) {
      setOwn(out, source, entry);
      continue;
    }
    const projected: JsonObject = {};
    for (const key of Object.keys(entry)) if (!OWNED_FIELDS.includes(key)) setOwn(projected, key, entry[key]!);
    setOwn(out, source, projected);
  }
  return out;
}

/** The code point at `i`, with a lone surrogate read as U+FFFD, exactly as UTF-8 encoding writes it. */
function codePointAt(text: string, i: number): number {
  const unit = text.charCodeAt(i);
  if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
    const next = text.charCodeAt(i + 1);
    if (next >= 0xdc00 && next <= 0xdfff) return (unit - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
  }
  return unit >= 0xd800 && unit <= 0xdfff ? 0xfffd : unit;
}

/**
 * Byte order of the UTF-8 encodings of two paths: the store's `comparePaths` order (listings and
 * Git), re-implemented because core imports nothing of the store. UTF-8 preserves code point
 * order, so code points are compared without encoding. Paths whose encodings are equal (they differ
 * only in lone surrogates versus U+FFFD) are then ordered by UTF-16 code units, so the order is
 * total and a sort never depends on its input order.
 */
export function compareSourcePaths(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = codePointAt(a, i);
    const y = codePointAt(b, j);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export type TagMatch = "all" | "any";

/**
 * The paths of artifacts whose tags include all (or any) of `tags`, in `compareSourcePaths`
 * order. An artifact without tags has none; "all" of no tags matches every artifact and "any"
 * of none matches nothing. A match only narrows candidates: it never authorizes reading a source.
 */
export function selectArtifactsByTags(artifacts: JsonObject, tags: readonly string[], mode: TagMatch): string[] {
  if (mode !== "all" && mode !== "any") {
    throw new StateFlowError("invalid-plan-input", `tag match mode must be "all" or "any", not ${String(mode)}`);
  }
  const wanted = [...new Set(tags)];
  const selected = Object.keys(artifacts).filter((source) => {
    const entry = artifacts[source]!;
    const own = isJsonObject(entry) && Array.isArray(entry.tags) ? new Set(entry.tags) : new Set<JsonValue>();
    return mode === "all" ? wanted.every((t) => own.has(t)) : wanted.some((t) => own.has(t));
  });
  return selected.sort(compareSourcePaths);
}
