// Argument schemas of the two model-facing tools, written once in valibot: they validate the
// arguments and generate the JSON Schema Pi shows the model (via @valibot/to-json-schema).
// Deeper semantic rules (nulls, no-ops, retired forms) live in storage/core/cohort.ts, which runs
// first so every refusal carries its named State Flow message.

import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { parsePatchSet, type PatchSet } from "../../storage/core/cohort.ts";
import { StateFlowError } from "../../storage/core/errors.ts";
import { HOT_OFFSETS } from "../../storage/core/temporal.ts";

const FieldPatch = (what: string) => v.pipe(v.looseObject({}), v.description(what));

const ScopePatch = (scope: string) =>
  v.pipe(
    v.strictObject({
      artifacts: v.optional(
        v.pipe(
          v.record(v.string(), v.nullable(v.looseObject({ description: v.optional(v.string()) }))),
          v.description("Compiled Knowledge keyed by exact source path; each entry needs a non-empty description"),
        ),
      ),
      contract: v.optional(FieldPatch("Stable requirements, decisions, rejected approaches, interface commitments")),
      working: v.optional(
        FieldPatch("Verified observations, validation, failures, open questions, exact continuation"),
      ),
    }),
    v.description(`${scope}; omit scopes you do not change`),
  );

export const PatchStateArgs = v.strictObject({
  global: v.optional(ScopePatch("Cross-project knowledge")),
  cwd: v.optional(ScopePatch("Project-local reusable state")),
  session: v.optional(ScopePatch("This branch's continuation")),
  final: v.optional(v.pipe(v.boolean(), v.description("true: your next complete answer is accepted as the response"))),
});

export const ReadStateArgs = v.strictObject({
  offset: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.maxValue(HOT_OFFSETS - 1),
      v.description("0 = now, n = n accepted transitions ago (0–7). Default 0."),
    ),
  ),
  scope: v.optional(
    v.pipe(
      v.picklist(["effective", "global", "cwd", "session"]),
      v.description("Which projection to read. Default effective."),
    ),
  ),
});

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

export const PATCH_STATE_JSON_SCHEMA = compactJsonSchema(toJsonSchema(PatchStateArgs));
export const READ_STATE_JSON_SCHEMA = compactJsonSchema(toJsonSchema(ReadStateArgs));

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
