// Argument schemas of the two model-facing tools, written once in valibot: they validate the
// arguments and generate the JSON Schema Pi shows the model (via @valibot/to-json-schema).
// Deeper semantic rules (nulls, no-ops, retired forms) live in storage/core/cohort.ts, which runs
// first so every refusal carries its named State Flow message.

import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { parsePatchSet, type PatchSet } from "../../storage/core/cohort.ts";
import { StateFlowError } from "../../storage/core/errors.ts";
import { HOT_OFFSETS } from "../../storage/core/temporal.ts";

// Every request carries these schemas and descriptions, so each rule is said once: what the scopes
// and fields hold and how a patch merges, in patch_state's description; field names, types and
// bounds, in the schema. What storage/core checks first with a named refusal is not repeated in
// the schema: a scope's other keys (`response`, unknown fields: cohort.ts) and artifact entries
// (scope-state.ts, artifacts.ts, when a patch is applied).
const ScopePatch = v.object({
  artifacts: v.optional(v.looseObject({})),
  contract: v.optional(v.looseObject({})),
  working: v.optional(v.looseObject({})),
});

export const PatchStateArgs = v.strictObject({
  global: v.optional(ScopePatch),
  cwd: v.optional(ScopePatch),
  session: v.optional(ScopePatch),
  final: v.optional(v.boolean()),
});

export const PATCH_STATE_DESCRIPTION =
  "Patch State Flow state. Scopes (effective = global → cwd → session, session wins): global (cross-project), " +
  "cwd (project), session (branch); omit unchanged ones. Fields: artifacts (compiled Knowledge by exact source " +
  "path, each {description, kind?, compilation?, tags?}), contract (stable requirements, decisions, commitments " +
  "and their consequences, rejected approaches), working (verified observations, failures, open questions, exact " +
  "continuation). Objects merge, arrays and values replace, null deletes a key (not inside arrays). final:true: " +
  "your next complete answer becomes the response.";

export const ReadStateArgs = v.strictObject({
  offset: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(HOT_OFFSETS - 1))),
  scope: v.optional(v.picklist(["effective", "global", "cwd", "session"])),
});

export const READ_STATE_DESCRIPTION =
  "State Flow state n accepted transitions ago (offset, default 0 = now) or of one scope (default effective).";

export type ReadStateInput = v.InferOutput<typeof ReadStateArgs>;

/**
 * The generated JSON Schema without what only repeats a default: `$schema`, empty `required`
 * lists, `propertyNames` of type string (every JSON key is one) and empty `properties`. Every
 * request carries the tool schemas, so each of these costs tokens on every inference.
 */
export function compactJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(compactJsonSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema") continue;
    if (key === "required" && Array.isArray(value) && value.length === 0) continue;
    if (key === "propertyNames" && isStringType(value)) continue;
    if (key === "properties" && isEmptyObject(value)) continue;
    out[key] = compactJsonSchema(value);
  }
  return out;
}

const isStringType = (value: unknown) =>
  typeof value === "object" &&
  value !== null &&
  Object.keys(value).length === 1 &&
  (value as { type?: unknown }).type === "string";
const isEmptyObject = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;

// Converted when Pi is given the tools (a branch's first activation), not at load: a session where State Flow
// stays off never needs them, and the conversion is a share of the package's load time.
let patchStateSchema: ReturnType<typeof compactJsonSchema> | undefined;
let readStateSchema: ReturnType<typeof compactJsonSchema> | undefined;
export const patchStateJsonSchema = () => (patchStateSchema ??= compactJsonSchema(toJsonSchema(PatchStateArgs)));
export const readStateJsonSchema = () => (readStateSchema ??= compactJsonSchema(toJsonSchema(ReadStateArgs)));

/** Full validation of patch_state arguments: State Flow's named rules, then the tool schema. */
export function parsePatchStateArgs(input: unknown): PatchSet {
  const set = parsePatchSet(input);
  const result = v.safeParse(PatchStateArgs, input);
  if (!result.success) {
    const issue = result.issues[0]!;
    const path = (issue.path ?? []).map((p) => String((p as { key: unknown }).key)).join(".");
    throw new StateFlowError("invalid-patch", issue.message, path || undefined);
  }
  return set;
}

export function parseReadStateArgs(input: unknown): {
  offset: number;
  scope: "effective" | "global" | "cwd" | "session";
} {
  const result = v.safeParse(ReadStateArgs, input ?? {});
  if (!result.success) {
    const issue = result.issues[0]!;
    const path = (issue.path ?? []).map((p) => String((p as { key: unknown }).key)).join(".");
    throw new StateFlowError(
      "offset-out-of-contract",
      `${issue.message}; read_state takes {offset?: integer 0–7, scope?: effective|global|cwd|session}`,
      path || undefined,
    );
  }
  return { offset: result.output.offset ?? 0, scope: result.output.scope ?? "effective" };
}
