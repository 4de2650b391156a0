import { describe, expect, it } from "vitest";
import { flattenValue } from "../../machines/state-value.ts";

describe("flattenValue", () => {
  it("names an atomic state, a nested one by its path, and parallel regions joined by |", () => {
    expect(flattenValue("off")).toBe("off");
    expect(flattenValue({ active: { bootstrap: "fromHandoff" } })).toBe("active.bootstrap.fromHandoff");
    expect(flattenValue({ open: { framing: "framed", answer: "resolving" } })).toBe(
      "open.framing.framed|answer.resolving",
    );
  });
});
