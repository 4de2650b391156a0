import { describe, expect, it } from "vitest";
import {
  NOTICES,
  episodeNotices,
  inputRefusedNotice,
  layoutAdoptedNotice,
  legacyMigratedNotice,
  legacySkillsNotice,
  olderEntryNotice,
  predecessorRestoredNotice,
  unanchoredDetail,
  unsavedSessionKeptNotice,
  unsavedSessionRemovedNotice,
} from "../../runtime/notices.ts";

describe("episode notices", () => {
  it("every error and warning says what to do next (or points at the error that does)", () => {
    for (const [code, { text, level }] of Object.entries(NOTICES)) {
      if (level === "info") continue;
      expect(text, code).toMatch(
        // (a leftover folder: it can be deleted)
        /\/tree|\/state-flow-start|\/state-flow-stop|retry|Retry|Fix the cause|see the previous error|can be deleted/,
      );
    }
  });
});

describe("episodeNotices", () => {
  it("a failed step is one notice: what failed, its cause, then what that left and how to go on", () => {
    expect(episodeNotices("start-failed", "disk full")).toEqual([
      {
        text:
          "State Flow start failed: disk full. Nothing was enabled; run /state-flow-start again once that is " +
          "fixed.",
        level: "error",
      },
    ]);
    expect(episodeNotices("stop-failed", "The lock is held.")).toEqual([
      {
        text:
          "State Flow could not persist the stop: The lock is held. The branch stays enabled; retry " +
          "/state-flow-stop once the store is writable.",
        level: "error",
      },
    ]);
    expect(episodeNotices("adoption-failed", "no identity")).toEqual([
      {
        text:
          "State Flow could not adopt this branch's store into Git: no identity. The branch stays enabled on its " +
          "unchanged file-only store; run /state-flow-start again once that is fixed.",
        level: "error",
      },
    ]);
  });

  it("an unproven restore carries its reason in its one line; a notice without detail is its text alone", () => {
    expect(episodeNotices("restore-unproven", "meta.json differs")).toEqual([
      { text: `${NOTICES["restore-unproven"].text} Reason: meta.json differs`, level: "error" },
    ]);
    expect(episodeNotices("already-active", undefined)).toEqual([NOTICES["already-active"]]);
    expect(episodeNotices("start-failed", undefined)).toEqual([NOTICES["start-failed"]]);
  });
});

describe("a session Pi never saved", () => {
  it("says the start it held is removed, where, and what keeps one; or that its folder stays and why", () => {
    const removed = unsavedSessionRemovedNotice("/store/proj/sess");
    expect(removed).toMatch(/^Pi did not save this session \(it ended before any conversation\)/);
    expect(removed).toContain("removed the session state it had started, /store/proj/sess.");
    expect(removed).toContain("in a session you continue (pi -c), or together with a request");
    expect(unsavedSessionKeptNotice("lock held")).toContain(
      "could not remove the session state it had started: lock held",
    );
  });

  it("is what the episode's unsaved-removed (the folder) and unsaved-kept (the error) notices say", () => {
    expect(episodeNotices("unsaved-removed", "/store/proj/sess")).toEqual([
      { text: unsavedSessionRemovedNotice("/store/proj/sess"), level: "info" },
    ]);
    expect(episodeNotices("unsaved-kept", "The lock is held.")).toEqual([
      { text: unsavedSessionKeptNotice("The lock is held."), level: "warning" },
    ]);
    expect(unsavedSessionKeptNotice("The lock is held.")).toContain("had started: The lock is held. The folder stays");
    expect(NOTICES["unsaved-removed"].text).toContain("removed the session state it had started. Start State Flow");
  });
});

describe("legacy migration notices", () => {
  it("name the migrated scopes and revision", () => {
    expect(legacyMigratedNotice({ scopes: ["global", "cwd"], revision: "abc" })).toBe(
      "State Flow migrated the legacy state.json of the global, cwd scope(s) into checkpoints with an empty tail " +
        "(revision abc); the state is unchanged and state.json is gone.",
    );
  });

  it("name moved, unverified and dropped Skill compilations", () => {
    const text = legacySkillsNotice([
      { path: "/a/SKILL.md", to: "cwd", verified: true, superseded: false },
      { path: "/b/SKILL.md", to: "global", verified: false, superseded: false },
      { path: "/c/SKILL.md", to: "cwd", verified: true, superseded: true },
    ]);
    expect(text).toContain("moved 2 legacy Skill compilation(s)");
    expect(text).toContain("(/a/SKILL.md → cwd, /b/SKILL.md → global)");
    expect(text).toContain("Unverified (source unreadable): /b/SKILL.md.");
    expect(text).toContain("Dropped, a Skill artifact already held them: /c/SKILL.md.");
  });
});

describe("older sessions", () => {
  it("a refused prompt names why and what to do, per failed-closed kind", () => {
    const unanchored = inputRefusedNotice("unanchored", unanchoredDetail(["config", "state"]));
    expect(unanchored).toMatch(/^State Flow did not run this prompt: it is failed closed on this branch because/);
    expect(unanchored).toContain("an older form carrying config, state but no revision");
    expect(unanchored).toContain("Run /state-flow-start to establish an empty session origin here");
    expect(inputRefusedNotice("lockBusy", null)).toContain("Retry /state-flow-start once the other writer is done");
    expect(inputRefusedNotice("unproven", "gone")).toMatch(/recorded revision \(gone\).*Select a valid checkpoint/);
  });

  it("say what was restored from an older form, once, and what the branch records now", () => {
    const r = "a".repeat(40);
    const n = "b".repeat(40);
    expect(olderEntryNotice(3, r)).toContain(`restored step 3 (${r.slice(0, 17)}) from an older State Flow checkpoint`);
    expect(predecessorRestoredNotice(r, 0, n)).toContain(`revision ${n.slice(0, 12)}, which the branch records`);
    expect(layoutAdoptedNotice("--a--1234abcd/, --a--1234abcd/s/", n, true, r)).toContain(
      `The branch now records ${n.slice(0, 12)} in place of ${r.slice(0, 12)}`,
    );
    expect(layoutAdoptedNotice("x/", n, false, r)).toContain("is older and is read as it is there");
  });
});
