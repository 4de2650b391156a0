import { describe, expect, it } from "vitest";
import {
  PATCH_STATE_DESCRIPTION,
  patchStateJsonSchema,
  READ_STATE_DESCRIPTION,
  compactJsonSchema,
  readStateJsonSchema,
  parsePatchStateArgs,
  parseReadStateArgs,
} from "../../../adapters/pi/tool-schemas.ts";

describe("tool JSON schemas generated from valibot", () => {
  it("patch_state: three optional scopes plus final, unknown fields rejected", () => {
    const schema = patchStateJsonSchema() as Record<string, any>;
    expect(schema.type).toBe("object");
    expect(Object.keys(schema.properties)).toEqual(["global", "cwd", "session", "final"]);
    expect(schema.required ?? []).toEqual([]);
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties.session.properties)).toEqual(["artifacts", "contract", "working"]);
    expect(schema.properties.final.type).toBe("boolean");
    // A scope's other keys are refused by State Flow's own rule, by name, before the schema runs.
    expect(() => parsePatchStateArgs({ session: { notes: "x" } })).toThrow(/unknown field; a scope patch may touch/);
    expect(() => parsePatchStateArgs({ session: { artifacts: { "/k.md": 5 } } })).not.toThrow();
  });

  it("carry no default-only keywords, and say each merge rule once (in the tool description)", () => {
    const json = JSON.stringify(patchStateJsonSchema()) + JSON.stringify(readStateJsonSchema());
    expect(json).not.toMatch(/"\$schema"|"required":\[\]|"propertyNames"|"properties":\{\}/);
    expect(json).not.toMatch(/merge|description/i);
    // the description says once what each scope and field holds, and how a patch merges
    for (const said of [
      /effective = global → cwd → session, session wins/,
      /global \(cross-project\), cwd \(project\), session \(branch\); omit unchanged ones/,
      /artifacts \(compiled Knowledge by exact source path, each \{description, kind\?, compilation\?, tags\?\}\)/,
      /contract \(stable requirements, decisions, commitments and their consequences, rejected approaches\)/,
      /working \(verified observations, failures, open questions, exact continuation\)/,
      /Objects merge, arrays and values replace, null deletes a key \(not inside arrays\)/,
      /final:true: your next complete answer becomes the response/,
    ])
      expect(PATCH_STATE_DESCRIPTION).toMatch(said);
    expect(READ_STATE_DESCRIPTION).toMatch(/offset, default 0 = now.*default effective/);
  });

  it("compactJsonSchema drops only what repeats a default", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        a: { type: "object", properties: {}, required: [] },
        b: { type: "object", propertyNames: { type: "string" }, additionalProperties: { type: "number" } },
        c: { type: "object", propertyNames: { pattern: "^x" }, required: ["k"], properties: { k: { type: "string" } } },
        d: { anyOf: [{ type: "string" }, { type: "null" }] },
      },
      required: [],
    };
    expect(compactJsonSchema(schema)).toEqual({
      type: "object",
      properties: {
        a: { type: "object" },
        b: { type: "object", additionalProperties: { type: "number" } },
        c: { type: "object", propertyNames: { pattern: "^x" }, required: ["k"], properties: { k: { type: "string" } } },
        d: { anyOf: [{ type: "string" }, { type: "null" }] },
      },
    });
  });

  it("read_state: offset 0–7 and a scope selector", () => {
    const schema = readStateJsonSchema() as Record<string, any>;
    expect(schema.properties.offset).toMatchObject({ type: "integer", minimum: 0, maximum: 7 });
    expect(schema.properties.scope.enum).toEqual(["effective", "global", "cwd", "session"]);
    expect(schema.additionalProperties).toBe(false);
  });
});

describe("argument parsing", () => {
  it("accepts patches and final-only eligibility", () => {
    expect(parsePatchStateArgs({ session: { working: { a: null, b: [1] } }, final: true }).final).toBe(true);
    expect(parsePatchStateArgs({ final: true }).patches).toEqual({});
  });

  it("rejects with State Flow's named messages first", () => {
    expect(() => parsePatchStateArgs({ scope: "session", patch: {} })).toThrow(/retired \{scope, patch\} form/);
    expect(() => parsePatchStateArgs({ session: { response: "x" } })).toThrow(/response is not patchable/);
    expect(() => parsePatchStateArgs({})).toThrow(/at least one of global, cwd, session, or final:true/);
  });

  it("read_state defaults and bounds", () => {
    expect(parseReadStateArgs({})).toEqual({ offset: 0, scope: "effective" });
    expect(parseReadStateArgs(undefined)).toEqual({ offset: 0, scope: "effective" });
    expect(parseReadStateArgs({ offset: 3, scope: "cwd" })).toEqual({ offset: 3, scope: "cwd" });
    expect(() => parseReadStateArgs({ offset: 8 })).toThrow(/^offset: .*read_state takes \{offset\?: integer 0–7/);
    expect(() => parseReadStateArgs({ scope: "project" })).toThrow(/^scope: /);
    expect(() => parseReadStateArgs({ extra: 1 })).toThrow();
  });
});
