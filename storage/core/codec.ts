// Deterministic codec for the durable documents: a scope's checkpoint.json + patches.jsonl pair,
// the session runtime meta.json, scope meta.json and the session config.json.
// Serialization is canonical (sorted keys), so equal content means equal bytes. Parsing validates
// everything before anything is accepted: shape, tail bound, lineage order, no-op records and
// that replay reproduces every recorded semantic hash.

import * as v from "valibot";
import { StateFlowError, type StateFlowErrorCode } from "./errors.ts";
import { diffFields, hashJson, sortKeysDeep, type JsonObject, type JsonValue } from "./json.ts";
import { applyScopePatch, parseScopePatch, parseScopeState, type ScopeName } from "./scope-state.ts";
import {
  MAX_TAIL,
  assertLineage,
  emptyStream,
  type Checkpoint,
  type Lineage,
  type PatchRecord,
  type ScopeStream,
} from "./temporal.ts";

const FORMAT_VERSION = 1;
export const CHECKPOINT_FILE = "checkpoint.json";
export const PATCHES_FILE = "patches.jsonl";
export const META_FILE = "meta.json";
export const CONFIG_FILE = "config.json";

type Bytes = string | Uint8Array;

function text(bytes: Bytes): string {
  return typeof bytes === "string" ? bytes : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}

function pretty(value: unknown): string {
  return `${JSON.stringify(sortKeysDeep(value as JsonValue), null, 2)}\n`;
}

function line(value: unknown): string {
  return `${JSON.stringify(sortKeysDeep(value as JsonValue))}\n`;
}

function fail(code: StateFlowErrorCode, file: string, message: string): never {
  throw new StateFlowError(code, message, file);
}

function decodeJson(bytes: Bytes, file: string): unknown {
  let source: string;
  try {
    source = text(bytes);
  } catch {
    return fail("invalid-document", file, "is not valid UTF-8");
  }
  try {
    return JSON.parse(source);
  } catch (error) {
    return fail(
      "invalid-document",
      file,
      `is not valid JSON (${(error as Error).message}); it may be truncated or corrupt`,
    );
  }
}

function check<T extends v.GenericSchema>(schema: T, value: unknown, file: string): v.InferOutput<T> {
  const result = v.safeParse(schema, value);
  if (result.success) return result.output;
  const issue = result.issues[0]!;
  const key = (issue.path ?? []).map((p) => String((p as { key: unknown }).key)).join(".");
  return fail("invalid-document", key ? `${file}#${key}` : file, issue.message);
}

const Hash = v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/, "must be sha256:<64 lowercase hex>"));
const Id = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));
const Step = v.pipe(v.number("must be a number"), v.integer("must be an integer"), v.minValue(0, "must be >= 0"));

const BoundarySchema = v.strictObject({ lineage: Id, id: Id, step: Step });

function checkpointSchema(scope: ScopeName) {
  return v.strictObject({
    version: v.literal(FORMAT_VERSION, `must be format version ${FORMAT_VERSION}`),
    scope: v.literal(scope, `must name the ${scope} scope`),
    through: BoundarySchema,
    hash: Hash,
    state: v.unknown(),
  });
}

function recordSchema(scope: ScopeName) {
  return v.strictObject({
    version: v.literal(FORMAT_VERSION, `must be format version ${FORMAT_VERSION}`),
    scope: v.literal(scope, `must name the ${scope} scope`),
    lineage: Id,
    id: Id,
    parent: Id,
    step: Step,
    patch: v.unknown(),
    hash: Hash,
    follows: v.optional(Id),
  });
}

export interface StreamFiles {
  checkpoint: string;
  patches: string;
}

export function serializeScopeStream(stream: ScopeStream): StreamFiles {
  const { scope, checkpoint } = stream;
  return {
    checkpoint: pretty({
      version: FORMAT_VERSION,
      scope,
      through: checkpoint.through,
      hash: checkpoint.hash,
      state: checkpoint.state,
    }),
    patches: stream.tail
      .map((r) =>
        line({
          version: FORMAT_VERSION,
          scope,
          lineage: r.lineage,
          id: r.id,
          parent: r.parent,
          step: r.step,
          patch: r.patch,
          hash: r.hash,
          ...(r.follows === undefined ? {} : { follows: r.follows }),
        }),
      )
      .join(""),
  };
}

export interface StreamInput {
  checkpoint: Bytes | null;
  patches: Bytes | null;
}

/**
 * Parses and fully validates a scope's pair. Both absent is an empty scope (a scope never
 * written); exactly one absent is an incomplete pair and fails closed. `dir` prefixes messages.
 */
export function parseScopeStream(scope: ScopeName, input: StreamInput, dir: string = scope): ScopeStream {
  const checkpointFile = `${dir}/${CHECKPOINT_FILE}`;
  const patchesFile = `${dir}/${PATCHES_FILE}`;
  if (input.checkpoint === null && input.patches === null) return emptyStream(scope);
  if (input.checkpoint === null)
    fail(
      "incomplete-pair",
      checkpointFile,
      `is missing while ${PATCHES_FILE} exists; restore it (e.g. from Git) rather than recreating it`,
    );
  if (input.patches === null)
    fail(
      "incomplete-pair",
      patchesFile,
      `is missing while ${CHECKPOINT_FILE} exists; restore it (an empty tail is an empty file)`,
    );

  const doc = check(checkpointSchema(scope), decodeJson(input.checkpoint!, checkpointFile), checkpointFile);
  const state = parseScopeState(doc.state, `${checkpointFile}#state`);
  if (hashJson(state as unknown as JsonObject) !== doc.hash) {
    fail(
      "replay-mismatch",
      checkpointFile,
      "state does not reproduce its recorded hash; the file was edited or corrupted",
    );
  }
  const checkpoint: Checkpoint = { through: doc.through, state, hash: doc.hash };

  const source = (() => {
    try {
      return text(input.patches!);
    } catch {
      return fail("invalid-document", patchesFile, "is not valid UTF-8");
    }
  })();
  if (source.length > 0 && !source.endsWith("\n")) {
    fail("invalid-document", patchesFile, "ends without a newline; the last record is truncated");
  }
  const lines = source.length === 0 ? [] : source.slice(0, -1).split("\n");
  if (lines.length > MAX_TAIL) {
    fail("oversized-tail", patchesFile, `holds ${lines.length} records; at most ${MAX_TAIL} may follow a checkpoint`);
  }
  // Structure and lineage order first, so a reordered tail is named as such, then replay.
  let previous = { lineage: checkpoint.through.lineage, id: checkpoint.through.id, step: checkpoint.through.step };
  const seen = new Set<string>([checkpoint.through.id]);
  const docs = lines.map((raw, index) => {
    const where = `${patchesFile}:${index + 1}`;
    if (raw.trim().length === 0) fail("invalid-document", where, "is an empty line");
    const doc = check(recordSchema(scope), decodeJson(raw, where), where);
    if (doc.step <= previous.step) {
      fail(
        "invalid-lineage",
        where,
        `step ${doc.step} does not follow step ${previous.step}; records must be in lineage order`,
      );
    }
    if (seen.has(doc.id)) fail("invalid-lineage", where, `transition id ${doc.id} repeats`);
    seen.add(doc.id);
    if (doc.lineage === previous.lineage && doc.step === previous.step + 1 && doc.parent !== previous.id) {
      fail("invalid-lineage", where, `parent ${doc.parent} is not the preceding transition ${previous.id}`);
    }
    previous = { lineage: doc.lineage, id: doc.id, step: doc.step };
    return { doc, where };
  });
  // Then the chain (once the order is known good, so a reordered tail is named as such): a record
  // names what it was appended after, and a tail is one chain whatever its lineages and steps.
  docs.forEach(({ doc, where }, index) => {
    const before = index === 0 ? checkpoint.through.id : docs[index - 1]!.doc.id;
    if (doc.follows === undefined || doc.follows === before) return;
    fail(
      "joined-histories",
      where,
      `record ${doc.id} (step ${doc.step}) was written after ${doc.follows}, not after ${before}, which precedes ` +
        "it here: two histories of this scope were joined (by a hand merge, or files copied from another " +
        "store). State Flow merges no semantic state: put back this scope's checkpoint.json and patches.jsonl as " +
        "one side wrote them (with Git: git log and git checkout <commit> -- <this folder>), then apply the other " +
        "side's changes as new transitions",
    );
  });
  const tail: PatchRecord[] = [];
  let current = state;
  for (const { doc, where } of docs) {
    const patch = parseScopePatch(doc.patch, `${where}#patch`, { allowResponse: true, allowProvenance: true });
    const next = applyScopePatch(current, patch, `${where}#patch`);
    if (!diffFields(current as unknown as JsonObject, next as unknown as JsonObject)) {
      fail("no-op-record", where, "changes nothing; no-op records are never part of history");
    }
    if (hashJson(next as unknown as JsonObject) !== doc.hash) {
      fail("replay-mismatch", where, "replay does not reproduce the recorded semantic hash");
    }
    const { lineage, id, parent, step, hash, follows } = doc;
    tail.push({ lineage, id, parent, step, patch, hash, ...(follows === undefined ? {} : { follows }) });
    current = next;
  }
  return { scope, checkpoint, tail };
}

// ---- runtime documents -------------------------------------------------------------------

export const PUBLICATION_POLICIES = ["off", "turn-end", "transition"] as const;
export type PublicationPolicy = (typeof PUBLICATION_POLICIES)[number];

// A meta.json's `artifacts` member is runtime-owned freshness evidence (storage/core/provenance.ts reads
// it field by field): malformed evidence fails closed only for the capability that needs it, so
// it never makes the rest of the file, and with it the scope, unreadable.
const ProvenanceSchema = v.custom<Record<string, unknown>>(
  (input) => typeof input === "object" && input !== null && !Array.isArray(input),
  "must be an object keyed by source path (the runtime's freshness evidence)",
);

// What a scope's checkpoint/patches pair held when State Flow last wrote it, kept in that scope's
// meta.json: the pair is read live by every session, and a tail cut short or a checkpoint put back
// still parses and still fits every lineage, so only a record written with the pair can tell that
// it is not what was accepted. Exact byte hashes catch any change; the boundaries name it.
const StreamRecordSchema = v.strictObject({
  checkpoint: Hash,
  patches: Hash,
  through: BoundarySchema,
  head: BoundarySchema,
  records: Step,
});

export type StreamRecord = v.InferOutput<typeof StreamRecordSchema>;

const LineageSchema = v.strictObject({
  id: Id,
  originStep: Step,
  window: v.array(v.strictObject({ id: Id, parent: Id, step: Step })),
});

const RuntimeMetaSchema = v.strictObject({
  version: v.literal(FORMAT_VERSION, `must be format version ${FORMAT_VERSION}`),
  kind: v.literal("session", 'must be "session"'),
  identity: v.strictObject({ cwd: Id, cwdKey: Id, sessionId: Id, sessionKey: Id }),
  lineage: LineageSchema,
  counters: v.strictObject({ transitions: Step, runs: Step }),
  revision: v.literal("self", 'must be "self" (the commit owning this file resolves it)'),
  // Written inside the accepted commit itself, so no push can have confirmed it yet: on restart
  // the selected revision is pushed again (idempotent) unless the policy is off or no remote exists.
  publication: v.strictObject({ intent: v.literal("unconfirmed", 'must be "unconfirmed"') }),
  artifacts: ProvenanceSchema,
  // The branch pointer this cohort was built on (null at a fresh origin): a process killed after
  // the store accepted a cohort but before Pi's branch recorded it is recognised by it on reopen.
  predecessor: v.optional(v.nullable(Id)),
  // A fork's origin: the session layer began as a copy of this parent session's layer at this boundary.
  fork: v.optional(v.strictObject({ sessionKey: Id, revision: Id, boundary: BoundarySchema })),
  // Absent in files an earlier version wrote: those load unproven and gain it on the next write.
  stream: v.optional(StreamRecordSchema),
});

export type RuntimeMeta = v.InferOutput<typeof RuntimeMetaSchema>;

const ScopeMetaSchema = v.strictObject({
  version: v.literal(FORMAT_VERSION, `must be format version ${FORMAT_VERSION}`),
  kind: v.picklist(["global", "cwd"], 'must be "global" or "cwd"'),
  identity: v.optional(v.strictObject({ cwd: Id, cwdKey: Id })),
  artifacts: ProvenanceSchema,
  stream: v.optional(StreamRecordSchema),
});

export type ScopeMeta = v.InferOutput<typeof ScopeMetaSchema>;

const SessionConfigSchema = v.strictObject({
  version: v.literal(FORMAT_VERSION, `must be format version ${FORMAT_VERSION}`),
  enabled: v.boolean("must be true or false"),
  remotePublication: v.picklist(PUBLICATION_POLICIES, `must be one of ${PUBLICATION_POLICIES.join(", ")}`),
});

export type SessionConfig = v.InferOutput<typeof SessionConfigSchema>;

export function serializeRuntimeMeta(meta: RuntimeMeta): string {
  check(RuntimeMetaSchema, meta, META_FILE);
  assertLineage(meta.lineage as Lineage, `${META_FILE}#lineage`);
  return pretty(meta);
}

export function parseRuntimeMeta(bytes: Bytes, file = META_FILE): RuntimeMeta {
  const meta = check(RuntimeMetaSchema, decodeJson(bytes, file), file);
  assertLineage(meta.lineage as Lineage, `${file}#lineage`);
  return meta;
}

export function serializeScopeMeta(meta: ScopeMeta): string {
  check(ScopeMetaSchema, meta, META_FILE);
  return pretty(meta);
}

export function parseScopeMeta(bytes: Bytes, file = META_FILE): ScopeMeta {
  return check(ScopeMetaSchema, decodeJson(bytes, file), file);
}

export function serializeSessionConfig(config: SessionConfig): string {
  check(SessionConfigSchema, config, CONFIG_FILE);
  return pretty(config);
}

export function parseSessionConfig(bytes: Bytes, file = CONFIG_FILE): SessionConfig {
  return check(SessionConfigSchema, decodeJson(bytes, file), file);
}
