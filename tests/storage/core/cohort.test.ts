import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import { hashJson } from "../../../storage/core/json.ts";
import { originateView, readTemporalState } from "../../../storage/core/temporal.ts";

describe("parsePatchSet", () => {
  it("accepts any combination of scopes plus final", () => {
    expect(parsePatchSet({ session: { working: { a: 1 } }, final: true })).toEqual({
      patches: { session: { working: { a: 1 } } },
      final: true,
    });
    expect(parsePatchSet({ final: true })).toEqual({ patches: {}, final: true });
  });

  it("requires a scope or final:true", () => {
    expect(rejection(() => parsePatchSet({})).code).toBe("empty-cohort");
    expect(rejection(() => parsePatchSet({ final: false })).code).toBe("empty-cohort");
  });

  it("rejects the retired forms and unknown keys with what to do instead", () => {
    expect(rejection(() => parsePatchSet({ scope: "session", patch: {} })).message).toMatch(
      /^scope: the retired \{scope, patch\} form is not accepted/,
    );
    expect(rejection(() => parsePatchSet({ unchanged: true })).message).toMatch(
      /^unchanged: the retired unchanged form/,
    );
    expect(rejection(() => parsePatchSet({ project: {} })).message).toBe(
      "project: unknown field; patch_state takes only global, cwd, session and final",
    );
    expect(rejection(() => parsePatchSet({ final: "yes" })).message).toBe("final: final must be true or false");
  });

  it("rejects an empty supplied scope", () => {
    expect(rejection(() => parsePatchSet({ session: {}, final: true })).message).toMatch(/^session: empty scope patch/);
  });

  it("rejects model-authored response", () => {
    expect(rejection(() => parsePatchSet({ session: { response: "x" } })).code).toBe("invalid-patch");
    expect(parsePatchSet({ session: { response: "x" } }, { allowResponse: true }).patches.session).toEqual({
      response: "x",
    });
  });
});

describe("stageCohort", () => {
  it("stages one transition against one basis and leaves the input view untouched", () => {
    const view = originateView("L");
    const frozen = structuredClone(view);
    const staged = stageCohort(
      view,
      parsePatchSet({ cwd: { contract: { lang: "ts" } }, session: { working: { next: "test" } } }).patches,
      "T1",
    );
    expect(view).toEqual(frozen);
    expect(staged.cohort.basis.head).toEqual({ lineage: "L", id: "L", step: 0 });
    // a stream without records has its checkpoint's semantic hash
    expect(staged.cohort.basis.hashes.session).toBe(view.streams.session.checkpoint.hash);
    expect(staged.cohort.transition).toEqual({ id: "T1", parent: "L", step: 1 });
    expect(Object.keys(staged.cohort.records).sort()).toEqual(["cwd", "session"]);
    expect(staged.cohort.records.cwd!.hash).toBe(hashJson(staged.view.current.cwd as never));
    expect(readTemporalState(staged.view).state.contract).toEqual({ lang: "ts" });
  });

  it("records the effective patch, not no-op members", () => {
    const first = stageCohort(
      originateView("L"),
      parsePatchSet({ session: { working: { a: 1, b: 2 } } }).patches,
      "T1",
    ).view;
    const second = stageCohort(
      first,
      parsePatchSet({ session: { working: { a: 1, b: 3, missing: null } } }).patches,
      "T2",
    );
    expect(second.cohort.records.session!.patch).toEqual({ working: { b: 3 } });
  });

  it("treats a runtime response-only change as a real transition", () => {
    const staged = stageCohort(
      originateView("L"),
      parsePatchSet({ session: { response: "Done." } }, { allowResponse: true }).patches,
      "T1",
    );
    expect(staged.view.lineage.window).toHaveLength(1);
    expect(readTemporalState(staged.view).state.response).toBe("Done.");
    expect(readTemporalState(staged.view, 1).state.response).toBe("");
  });

  it("rejects final-only and materially no-op cohorts, creating no history", () => {
    const view = originateView("L");
    expect(rejection(() => stageCohort(view, parsePatchSet({ final: true }).patches)).code).toBe("empty-cohort");
    expect(
      rejection(() => stageCohort(view, parsePatchSet({ session: { working: { absent: null } } }).patches)).code,
    ).toBe("no-op-cohort");
    expect(view.lineage.window).toEqual([]);
  });

  it("generates opaque unique transition ids by default", () => {
    const view = originateView("L");
    const a = stageCohort(view, parsePatchSet({ session: { working: { a: 1 } } }).patches).cohort.transition.id;
    const b = stageCohort(view, parsePatchSet({ session: { working: { a: 1 } } }).patches).cohort.transition.id;
    expect(a).not.toBe(b);
  });
});
