import { describe, expect, it } from "vitest";
import { arrivalNotice, syncLines, waitingLine } from "../../runtime/sync-report.ts";
import type { SyncView } from "../../runtime/sync.ts";

const finding = {
  remote: "origin",
  local: "a".repeat(40),
  remoteHead: "b".repeat(40),
  fromRemote: [],
  conflicts: [],
  localStartOnly: false,
};
const view = (state: string, extra: Partial<SyncView> = {}, f: object = {}): SyncView => ({
  state,
  finding: { ...finding, standing: state as never, ...f },
  open: [],
  arrival: null,
  error: null,
  ...extra,
});

describe("what a person reads of the sync", () => {
  it("after a re-apply, says how many of this machine's transitions became new ones on the remote's scope", () => {
    const arrival = {
      revision: "c".repeat(40),
      remote: "origin",
      scopes: ["global"],
      reapplied: { global: { applied: 2, present: 1 }, "cwd --p--": { applied: 1, present: 0 } },
    };
    expect(syncLines(view("ahead", { arrival }))).toEqual([
      "Sync: remote origin lacks this machine's newest changes; they are pushed",
      "Last brought in: global from another machine (remote origin) at cccccccccccc",
      "Re-applied on the remote's global: 2 transitions of this machine (1 the remote already held)",
      "Re-applied on the remote's cwd --p--: 1 transition of this machine",
    ]);
  });

  it("names every standing in a Pi user's words, never a clean answer it did not check", () => {
    expect(syncLines(null)[0]).toMatch(/^Sync: no remote to share state with/);
    expect(syncLines(view("idle"))[0]).toBe("Sync: not fetched yet in this session (/state-flow-sync fetches now)");
    expect(syncLines(view("equal"))[0]).toBe("Sync: up to date with remote origin (aaaaaaaaaaaa)");
    expect(syncLines(view("ahead"))[0]).toBe(
      "Sync: remote origin lacks this machine's newest changes; they are pushed",
    );
    expect(syncLines(view("unreachable", {}, { detail: "timed out" }))[0]).toBe(
      "Sync: could not fetch remote origin: timed out. Work goes on locally; /state-flow-sync tries again.",
    );
    expect(syncLines(view("behind", { error: "stale basis" }))[0]).toMatch(/another machine .* failed: stale basis/);
  });

  it("a conflict names the scopes, both revisions, the changed paths and both commands", () => {
    const open = [
      { scope: "global", localPaths: ["patches.jsonl"], remotePaths: ["patches.jsonl", "checkpoint.json"] },
      { scope: "cwd --p--", localPaths: ["--p--/patches.jsonl"], remotePaths: ["--p--/patches.jsonl"] },
    ];
    const lines = syncLines(view("diverged", { open }));
    expect(lines[0]).toBe("Sync: this machine and another machine (remote origin) both changed global, cwd --p--:");
    expect(lines).toContain(
      "  - global: this machine changed patches.jsonl; the remote changed patches.jsonl, checkpoint.json",
    );
    expect(lines).toContain(
      "  /state-flow-sync keep-local [scope]   keeps this machine's values (aaaaaaaaaaaa) for global, cwd --p--",
    );
    expect(lines).toContain("  /state-flow-sync take-remote [scope]  takes the remote's values (bbbbbbbbbbbb)");
    expect(lines).toContain(
      "  /state-flow-sync re-apply [scope]     applies this machine's changes again on top of the remote's",
    );
    // A session folder travels whole: re-applying is not offered for it.
    const session = [{ scope: "session --p--/s1", localPaths: ["--p--/s1/meta.json"], remotePaths: ["x"] }];
    expect(syncLines(view("diverged", { open: session })).join("\n")).not.toMatch(/re-apply/);
    // With the state paths known, those are named instead of the files.
    const named = syncLines(
      view("diverged", { open: [{ ...open[0]!, localChanges: ["working.width"], remoteChanges: ["working.width"] }] }),
    );
    expect(named).toContain("  - global: this machine changed working.width; the remote changed working.width");
  });

  it("unrelated histories are named; a store holding only its start is offered the remote's", () => {
    const start = syncLines(view("unrelated", {}, { localStartOnly: true }));
    expect(start[0]).toMatch(/unrelated to this store's .* nothing is ever force-pushed/);
    expect(start[1]).toBe("This store holds only its start: /state-flow-sync take-remote adopts the remote's state.");
  });

  it("an arrival and a held push are one line each", () => {
    expect(arrivalNotice({ revision: "c".repeat(40), remote: "origin", scopes: ["global"] }, true)).toBe(
      "State Flow: brought in another machine's changes (remote origin; global), joined with this machine's line " +
        "at cccccccccccc; sessions adopt them at their next run.",
    );
    expect(waitingLine("d".repeat(40), null, view("diverged"))).toMatch(
      /^Remote: waiting — another machine \(remote origin\)/,
    );
  });
});
