// Argument schemas of the two model-facing tools, written once in valibot: they validate the
// arguments and generate the JSON Schema Pi shows the model (via @valibot/to-json-schema).
// Deeper semantic rules (nulls, no-ops, retired forms) live in core/cohort.ts, which runs
// first so every refusal carries its named State Flow message.

import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { parsePatchSet, type PatchSet } from "../../core/cohort.ts";
import { StateFlowError } from "../../core/errors.ts";
import { HOT_OFFSETS } from "../../core/temporal.ts";

const FieldPatch = (what: string) =>
  v.pipe(
    v.looseObject({}),
    v.description(
      `${what}. Objects merge recursively, arrays and values replace, null deletes a key (never inside an array).`,
    ),
  );

const ScopePatch = (scope: string) =>
  v.pipe(
    v.strictObject({
      artifacts: v.optional(
        v.pipe(
          v.record(v.string(), v.nullable(v.looseObject({ description: v.optional(v.string()) }))),
          v.description(
            "Source-path-keyed compiled routing metadata; each entry needs a non-empty description. " +
              "null removes an entry.",
          ),
        ),
      ),
      contract: v.optional(FieldPatch("Stable requirements, decisions, rejected approaches, interface commitments")),
      working: v.optional(
        FieldPatch("Verified observations, validation, failures, unresolved questions, exact continuation"),
      ),
    }),
    v.description(`Patch for the ${scope} scope. Omit scopes you do not change.`),
  );

export const PatchStateArgs = v.strictObject({
  global: v.optional(ScopePatch("global (cross-project knowledge)")),
  cwd: v.optional(ScopePatch("cwd (project-local reusable state)")),
  session: v.optional(ScopePatch("session (this branch's continuation)")),
  final: v.optional(
    v.pipe(
      v.boolean(),
      v.description("true latches terminal eligibility: your next complete answer is accepted as the response."),
    ),
  ),
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

export const PATCH_STATE_JSON_SCHEMA = toJsonSchema(PatchStateArgs);
export const READ_STATE_JSON_SCHEMA = toJsonSchema(ReadStateArgs);

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
