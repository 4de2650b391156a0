import { describe, expect, it } from "vitest";
import {
  MAX_INTERRUPTED,
  NO_SPECIFICATION,
  renderSpecification,
  specificationAfterRun,
  specificationForRun,
  withRunSource,
  withUserMessage,
} from "../../machines/specification.ts";

describe("the current specification", () => {
  it("a prompt replaces it, dropping what earlier runs added", () => {
    const first = withUserMessage(specificationForRun(NO_SPECIFICATION, { kind: "prompt", text: "A" }), "also B");
    expect(specificationForRun(first, { kind: "prompt", text: "C" })).toEqual({ ...NO_SPECIFICATION, request: "C" });
  });

  it("a run a message starts keeps the request and what was added, and says what started it", () => {
    const current = withUserMessage(specificationForRun(NO_SPECIFICATION, { kind: "prompt", text: "A" }), "also B");
    const run = specificationForRun(current, { kind: "message", source: null });
    expect(run).toEqual({ ...NO_SPECIFICATION, request: "A", added: ["also B"], startedBy: { source: null } });
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

describe("interrupted requests", () => {
  const prompt = (text: string) => ({ kind: "prompt", text }) as const;
  it("a request whose run ended unanswered is kept, with its additions, when a prompt replaces it", () => {
    const first = specificationAfterRun(
      withUserMessage(specificationForRun(NO_SPECIFICATION, prompt("A")), "a2"),
      false,
    );
    const second = specificationForRun(first, prompt("B"));
    expect(second).toEqual({ ...NO_SPECIFICATION, request: "B", interrupted: [{ request: "A", added: ["a2"] }] });
    // a message-started run continues B and keeps A; an answer to it answers both
    const continued = specificationForRun(specificationAfterRun(second, false), { kind: "message", source: null });
    expect(continued.interrupted).toEqual([{ request: "A", added: ["a2"] }]);
    expect(specificationAfterRun(continued, true)).toMatchObject({ interrupted: [], dropped: 0, unanswered: false });
  });

  it("an answered request is not carried, and an empty unanswered one neither", () => {
    const answered = specificationAfterRun(specificationForRun(NO_SPECIFICATION, prompt("A")), true);
    expect(specificationForRun(answered, prompt("B")).interrupted).toEqual([]);
    const empty = specificationAfterRun(
      specificationForRun(NO_SPECIFICATION, { kind: "message", source: null }),
      false,
    );
    expect(specificationForRun(empty, prompt("B")).interrupted).toEqual([]);
  });

  it(`keeps the newest ${MAX_INTERRUPTED}, counts the dropped ones and says so`, () => {
    let spec = NO_SPECIFICATION;
    for (const text of ["r1", "r2", "r3", "r4", "r5", "r6", "r7"])
      spec = specificationAfterRun(specificationForRun(spec, prompt(text)), false);
    spec = specificationForRun(spec, prompt("now"));
    expect(spec.interrupted.map((r) => r.request)).toEqual(["r3", "r4", "r5", "r6", "r7"]);
    expect(spec.dropped).toBe(2);
    const lines = renderSpecification(spec);
    expect(lines[0]).toBe("now");
    expect(lines).toContain("- r3");
    expect(lines.at(-1)).toBe("(2 older interrupted request(s) were dropped: only the newest 5 are kept)");
    expect(lines.join("\n")).toMatch(/Earlier requests whose runs were interrupted before an answer was accepted/);
  });

  it("renders an interrupted request's additions under it", () => {
    const spec = specificationForRun(
      specificationAfterRun(withUserMessage(specificationForRun(NO_SPECIFICATION, prompt("A")), "also a2"), false),
      prompt("B"),
    );
    expect(renderSpecification(spec).slice(-2)).toEqual(["- A", "  added during its run: also a2"]);
  });
});
