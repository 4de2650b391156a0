import { describe, expect, it } from "vitest";
import { NOTICES } from "../../runtime/notices.ts";

describe("episode notices", () => {
  it("every error and warning says what to do next (or points at the error that does)", () => {
    for (const [code, { text, level }] of Object.entries(NOTICES)) {
      if (level === "info") continue;
      expect(text, code).toMatch(
        /\/tree|\/state-flow-start|\/state-flow-stop|retry|Retry|Fix the cause|see the previous error/,
      );
    }
  });
});
