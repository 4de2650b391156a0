import { describe, expect, it } from "vitest";
import { StateFlowError, childPath, errorMessage } from "../../core/errors.ts";

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
});
