import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { StateFlowError, childPath, errorMessage, issuePath } from "../../../storage/core/errors.ts";

describe("StateFlowError", () => {
  it("carries a code and prefixes the path", () => {
    const error = new StateFlowError("invalid-patch", "must be an object", "session.working");
    expect(error.message).toBe("session.working: must be an object");
    expect(error.code).toBe("invalid-patch");
    expect(error.path).toBe("session.working");
    expect(error).toBeInstanceOf(Error);
  });

  it("joins paths readably", () => {
    expect(childPath("session", "working")).toBe("session.working");
    expect(childPath("session.working", 3)).toBe("session.working[3]");
    expect(childPath("artifacts", "/a/b.md")).toBe('artifacts["/a/b.md"]');
    expect(childPath("", "global")).toBe("global");
  });

  it("reads the message of anything thrown", () => {
    expect(errorMessage(new Error("disk full"))).toBe("disk full");
    expect(errorMessage("plain")).toBe("plain");
  });

  it("points a valibot issue at its value below the base path", () => {
    const schema = v.object({ tags: v.array(v.string()) });
    const result = v.safeParse(schema, { tags: ["a", 7] });
    expect(result.success).toBe(false);
    expect(issuePath('artifacts["/k/a.md"]', result.issues![0]!)).toBe('artifacts["/k/a.md"].tags[1]');
  });
});
