// Runtime-owned artifact provenance: the `artifacts` section of a scope's meta.json,
// {"version":1,"artifacts":{<path>:{"sourceHash":"sha256:…","compilerRevision":"…","compiledAt"?:"…"}}},
// and the evidence each artifact's freshness is judged by.
//
// Why a lenient reader with a strict writer: each field enables one capability (sourceHash →
// source-change detection, compilerRevision → compiler freshness, compiledAt → age-based
// maintenance). A missing field only leaves its capability unknown, and a malformed one must fail
// closed for that capability alone, so one bad hash cannot make a whole meta.json unusable. The
// reader therefore reports evidence per path and per field instead of throwing. Stored entries are
// kept exactly as read, so an update to one path never launders another path's malformed evidence
// into "missing" (which would silently turn fail-closed into unknown-but-usable). Only what the
// runtime records is checked strictly: it must be well formed before it is written.

import * as v from "valibot";
import { StateFlowError } from "./errors.ts";
import { MAX_JSON_DEPTH, isJsonObject, sortKeysDeep, type JsonObject, type JsonValue } from "./json.ts";

/** The compiler revision State Flow records for Knowledge artifacts it compiles today. */
export const ARTIFACT_COMPILER_REVISION = "artifact-v1";

/** The meta.json format version the provenance section belongs to. */
export const PROVENANCE_VERSION = 1;

/** Provenance fields the runtime owns; a model-authored artifact may never carry them. */
export const PROVENANCE_FIELDS = ["sourceHash", "compilerRevision", "compiledAt"] as const;
export type ProvenanceField = (typeof PROVENANCE_FIELDS)[number];

/**
 * Retired fields once embedded in the semantic artifact itself, with the field each stands for.
 * They stay readable as compatibility evidence but are never shown to the model nor written anew.
 */
export const RETIRED_PROVENANCE_FIELDS = {
  hash: "sourceHash",
  compiler: "compilerRevision",
  compiled_at: "compiledAt",
} as const satisfies Record<string, ProvenanceField>;
export type RetiredProvenanceField = keyof typeof RETIRED_PROVENANCE_FIELDS;

const RETIRED_FOR: Record<ProvenanceField, RetiredProvenanceField> = {
  sourceHash: "hash",
  compilerRevision: "compiler",
  compiledAt: "compiled_at",
};

const SOURCE_HASH = /^sha256:[0-9a-f]{64}$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** Whether `text` has the one source hash form provenance uses, `sha256:<64 lowercase hex>`. */
export function isSourceHash(text: unknown): text is string {
  return typeof text === "string" && SOURCE_HASH.test(text);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Milliseconds since the epoch of an ISO 8601 date-time with seconds and a zone
 * (`2026-01-31T12:00:00.000Z`, `…+02:00`), or `undefined` when it is not one. Calendar fields are
 * range-checked here because `Date.parse` silently rolls `02-30` over into March.
 */
export function parseTimestamp(text: string): number | undefined {
  const match = TIMESTAMP.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  if (match[7] !== undefined && (Number(match[7]) > 23 || Number(match[8]) > 59)) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

const FieldSchemas: Record<ProvenanceField, v.GenericSchema<unknown, string>> = {
  sourceHash: v.pipe(
    v.string("must be a string"),
    v.regex(SOURCE_HASH, "must be sha256:<64 lowercase hex characters>"),
  ),
  compilerRevision: v.pipe(v.string("must be a string"), v.minLength(1, "must be a non-empty compiler revision")),
  compiledAt: v.pipe(
    v.string("must be a string"),
    v.check(
      (text) => parseTimestamp(text) !== undefined,
      "must be an ISO 8601 timestamp with seconds and zone, e.g. 2026-01-31T12:00:00.000Z",
    ),
  ),
};

/** What is known about one provenance field of one artifact, and where it came from. */
export type Evidence =
  | { readonly status: "valid"; readonly value: string; readonly from: EvidenceSource }
  | { readonly status: "missing" }
  | { readonly status: "malformed"; readonly reason: string; readonly from: EvidenceSource };

/** `meta`: the scope's meta.json; `retired`: a retired field embedded in the artifact entry. */
export type EvidenceSource = "meta" | "retired";

export type ArtifactEvidence = { readonly [F in ProvenanceField]: Evidence };

/**
 * A scope's provenance section as read. `missing`: no section (no file, or no `artifacts` member):
 * nothing is known and nothing fails. `malformed`: the section as a whole cannot be read, so every
 * path's evidence is malformed; `raw` keeps the unreadable `artifacts` value (when it is JSON) so a
 * rewrite of the surrounding meta.json preserves it instead of erasing the evidence.
 */
export interface ProvenanceSection {
  readonly status: "present" | "missing" | "malformed";
  readonly problem?: string;
  readonly raw?: JsonValue;
  /** Stored entries exactly as read (or as recorded), keyed by exact source path. */
  readonly entries: ReadonlyMap<string, JsonValue>;
}

/**
 * What the runtime records for one artifact. `compilerRevision` defaults to `artifact-v1`. Only a
 * migrated artifact whose source could not be read may lack `sourceHash`; it is then `unverified`.
 */
export interface ProvenanceRecord {
  sourceHash?: string;
  compilerRevision?: string;
  compiledAt?: string;
  /** The hash (if any) was carried over from a retired store, not observed on the source's bytes. */
  unverified?: true;
}

export function emptyProvenance(): ProvenanceSection {
  return { status: "missing", entries: new Map() };
}

function hasOwn(target: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(target, key);
}

function plainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A detached copy of a value JSON.parse could have produced (null allowed anywhere, unlike
 * semantic state), or `undefined` when it is not one. Stored evidence is preserved, not judged.
 */
function copyStored(value: unknown, depth: number): JsonValue | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "object" || depth > MAX_JSON_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    for (let i = 0; i < value.length; i++) {
      const item = hasOwn(value, String(i)) ? copyStored(value[i], depth + 1) : undefined;
      if (item === undefined) return undefined;
      out.push(item);
    }
    return out;
  }
  if (!plainObject(value)) return undefined;
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    const item = copyStored(value[key], depth + 1);
    if (item === undefined) return undefined;
    setOwn(out, key, item);
  }
  return out;
}

function malformedSection(problem: string, raw?: JsonValue): ProvenanceSection {
  return raw === undefined
    ? { status: "malformed", problem, entries: new Map() }
    : { status: "malformed", problem, raw, entries: new Map() };
}

/**
 * Reads the provenance section of a decoded meta.json document (any meta.json: only `version` and
 * `artifacts` are read, every other member belongs to its own codec). Never throws: problems
 * become `missing` or `malformed` evidence at the narrowest level they affect.
 */
export function parseProvenance(document: unknown): ProvenanceSection {
  if (document === undefined) return emptyProvenance();
  if (!plainObject(document)) return malformedSection("meta.json is not a JSON object");
  if (!hasOwn(document, "artifacts")) return emptyProvenance();
  const raw = copyStored(document.artifacts, 2);
  if (raw === undefined) return malformedSection("the artifacts section is not plain JSON");
  if (document.version !== PROVENANCE_VERSION) {
    return malformedSection(`meta.json version ${JSON.stringify(document.version)} is not ${PROVENANCE_VERSION}`, raw);
  }
  if (!isJsonObject(raw)) return malformedSection("the artifacts section is not an object keyed by source path", raw);
  return { status: "present", entries: new Map(Object.keys(raw).map((path) => [path, raw[path]!])) };
}

/**
 * `parseProvenance` over meta.json bytes; `null` means the file does not exist. Undecodable bytes
 * make the section malformed (nothing of it can be trusted), never an exception.
 */
export function decodeProvenance(bytes: string | Uint8Array | null): ProvenanceSection {
  if (bytes === null) return emptyProvenance();
  let source: string;
  try {
    source = typeof bytes === "string" ? bytes : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return malformedSection("meta.json is not valid UTF-8");
  }
  let document: unknown;
  try {
    document = JSON.parse(source);
  } catch {
    return malformedSection("meta.json is not valid JSON");
  }
  return parseProvenance(document);
}

function fieldEvidence(field: ProvenanceField, container: Record<string, unknown>, key: string, from: EvidenceSource) {
  if (!hasOwn(container, key)) return { status: "missing" } as const;
  const result = v.safeParse(FieldSchemas[field], container[key]);
  return result.success
    ? ({ status: "valid", value: result.output, from } as const)
    : ({ status: "malformed", reason: `${key} ${result.issues[0]!.message}`, from } as const);
}

/**
 * The evidence for one artifact path, field by field: the scope's meta.json first; where it holds
 * nothing for a field, a retired field embedded in `artifact` (the semantic entry) stands in.
 * A section that is malformed as a whole makes every field malformed, with no fallback, because
 * what meta.json says about the path is unknown.
 */
export function provenanceEvidence(section: ProvenanceSection, path: string, artifact?: JsonValue): ArtifactEvidence {
  if (section.status === "malformed") {
    const malformed = { status: "malformed", reason: section.problem ?? "unreadable", from: "meta" } as const;
    return { sourceHash: malformed, compilerRevision: malformed, compiledAt: malformed };
  }
  const stored = section.entries.get(path);
  const entry = stored === undefined ? undefined : plainObject(stored) ? stored : null;
  const embedded = plainObject(artifact) ? artifact : undefined;
  const one = (field: ProvenanceField): Evidence => {
    if (entry === null) return { status: "malformed", reason: "the provenance entry is not an object", from: "meta" };
    const fromMeta =
      entry === undefined ? ({ status: "missing" } as const) : fieldEvidence(field, entry, field, "meta");
    if (fromMeta.status !== "missing" || embedded === undefined) return fromMeta;
    return fieldEvidence(field, embedded, RETIRED_FOR[field], "retired");
  };
  return { sourceHash: one("sourceHash"), compilerRevision: one("compilerRevision"), compiledAt: one("compiledAt") };
}

function refuse(message: string, path?: string): never {
  throw new StateFlowError("invalid-provenance", message, path);
}

/**
 * Records (or replaces, whole) the provenance of one artifact. Replacement is complete on purpose:
 * a refreshed artifact must not keep obsolete fields of its previous entry. Throws
 * `invalid-provenance` for a malformed record or a section that is unreadable as a whole.
 */
export function recordProvenance(
  section: ProvenanceSection,
  path: string,
  record: ProvenanceRecord,
): ProvenanceSection {
  if (typeof path !== "string" || path.length === 0) refuse("an artifact path must be a non-empty string");
  if (section.status === "malformed") {
    refuse(
      `cannot record provenance: ${section.problem}; restore meta.json (e.g. from Git) or remove its ` +
        "artifacts member to start the section afresh, then retry",
      path,
    );
  }
  if (!plainObject(record))
    refuse("a provenance record must be an object {sourceHash, compilerRevision?, compiledAt?}");
  const { sourceHash, compilerRevision, compiledAt, unverified } = record as Record<string, unknown>;
  if (unverified !== undefined && unverified !== true) refuse("unverified must be true when present", path);
  if (sourceHash === undefined && unverified !== true) {
    refuse("sourceHash is required: only an unverified (migrated) record may lack it", path);
  }
  const entry: JsonObject = { compilerRevision: (compilerRevision ?? ARTIFACT_COMPILER_REVISION) as JsonValue };
  if (sourceHash !== undefined) entry.sourceHash = sourceHash as JsonValue;
  if (compiledAt !== undefined) entry.compiledAt = compiledAt as JsonValue;
  if (unverified === true) entry.unverified = true;
  for (const field of PROVENANCE_FIELDS) {
    if (!hasOwn(entry, field)) continue;
    const result = v.safeParse(FieldSchemas[field], entry[field]);
    if (!result.success) refuse(`${field} ${result.issues[0]!.message}`, path);
  }
  const entries = new Map(section.entries);
  entries.set(path, entry);
  return { status: "present", entries };
}

/**
 * Drops the provenance of the given paths (removed sources, deleted artifacts). A section that is
 * unreadable as a whole is returned unchanged: its evidence can only matter for artifacts that
 * still exist, and erasing it would fail open for them.
 */
export function pruneProvenance(section: ProvenanceSection, paths: Iterable<string>): ProvenanceSection {
  if (section.status === "malformed") return section;
  const entries = new Map(section.entries);
  let changed = false;
  for (const path of paths) changed = entries.delete(path) || changed;
  return changed ? { status: section.status, entries } : section;
}

/**
 * The canonical value of the `artifacts` member to embed in a meta.json (sorted keys, entries as
 * stored, malformed ones included). A section unreadable as a whole is written back exactly as it
 * was read; when nothing of it was JSON there is nothing to preserve and this throws.
 */
export function encodeProvenanceArtifacts(section: ProvenanceSection): JsonValue {
  if (section.status === "malformed") {
    if (section.raw === undefined) refuse(`cannot re-encode provenance: ${section.problem}; restore meta.json first`);
    return sortKeysDeep(section.raw);
  }
  const out: JsonObject = {};
  for (const [path, entry] of section.entries) setOwn(out, path, entry);
  return sortKeysDeep(out);
}

/** The standalone canonical document `{"version":1,"artifacts":{…}}`, pretty-printed like every meta.json. */
export function serializeProvenance(section: ProvenanceSection): string {
  const document = { version: PROVENANCE_VERSION, artifacts: encodeProvenanceArtifacts(section) };
  return `${JSON.stringify(sortKeysDeep(document), null, 2)}\n`;
}
