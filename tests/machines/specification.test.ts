import { describe, expect, it } from "vitest";
import {
  NO_SPECIFICATION,
  renderSpecification,
  specificationForRun,
  withRunSource,
  withUserMessage,
} from "../../machines/specification.ts";

describe("the current specification", () => {
  it("a prompt replaces it, dropping what earlier runs added", () => {
    const first = withUserMessage(specificationForRun(NO_SPECIFICATION, { kind: "prompt", text: "A" }), "also B");
    expect(specificationForRun(first, { kind: "prompt", text: "C" })).toEqual({
      request: "C",
      added: [],
      startedBy: null,
    });
  });

  it("a run a message starts keeps the request and what was added, and says what started it", () => {
    const current = withUserMessage(specificationForRun(NO_SPECIFICATION, { kind: "prompt", text: "A" }), "also B");
    const run = specificationForRun(current, { kind: "message", source: null });
    expect(run).toEqual({ request: "A", added: ["also B"], startedBy: { source: null } });
    expect(withRunSource(run, "reminder").startedBy).toEqual({ source: "reminder" });
    expect(withRunSource(current, "reminder"), "a prompt's run has no source to learn").toBe(current);
  });

  it("renders the request, the additions in order and the source; an empty one says so", () => {
    const spec = withUserMessage(
      withUserMessage(specificationForRun(NO_SPECIFICATION, { kind: "prompt", text: "Fix it " }), "and test"),
      " ",
    );
    expect(renderSpecification(specificationForRun(spec, { kind: "message", source: "cron" }))).toEqual([
      "Fix it",
      "",
      "Added by the user during the run, in order (newest last):",
      "- and test",
      "- (empty)",
      "",
      "This run was started by a message (cron), not by a new user request: the request above still applies.",
    ]);
    expect(renderSpecification(NO_SPECIFICATION)).toEqual(["(none yet: no user request in this session so far)"]);
    expect(renderSpecification(specificationForRun(NO_SPECIFICATION, { kind: "message", source: null }))[2]).toBe(
      "This run was started by a message, not by a new user request: the request above still applies.",
    );
  });
});
