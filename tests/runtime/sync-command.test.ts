// /state-flow-sync over a real Git store on a bare remote: fetch-and-report, a choice refused with
// what to run instead (and following it works), and a scope named that no conflict holds.
import { afterEach, describe, expect, it } from "vitest";
import type { BranchPublication } from "../../runtime/branch-publication.ts";
import { runSyncCommand } from "../../runtime/sync-command.ts";
import { TempDirs, cohortFixture, git } from "../support/store-fixtures.ts";
import { publishFiles, syncMachine } from "../support/sync-machines.ts";

const temps = new TempDirs();
const opened: BranchPublication[] = [];
afterEach(() => {
  for (const publication of opened.splice(0)) publication.close();
  temps.cleanup();
});
const { g } = cohortFixture();

describe("/state-flow-sync", () => {
  it("fetches and reports; a choice with nothing to choose is refused; a divergence's advice works", async () => {
    const bare = temps.make("sf-sync-cmd-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await syncMachine(temps, opened, { bare, clone: false });
    const a0 = await publishFiles(a.store, { [g.checkpoint]: "g0" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await syncMachine(temps, opened, { bare, clone: true });
    await b.open(a0);
    expect((await runSyncCommand(b.publication, "")).text).toBe(
      "Sync: up to date with remote origin (" + a0.slice(0, 12) + ")",
    );
    const nothing = await runSyncCommand(b.publication, "keep-local");
    expect(nothing.refused).toBe(true);
    expect(nothing.text).toMatch(/^Nothing to choose: no scope is changed here and on another machine\./);
    const wrong = await runSyncCommand(b.publication, "merge");
    expect(wrong).toMatchObject({ refused: true });
    expect(wrong.text).toMatch(/^Usage: \/state-flow-sync/);

    await publishFiles(a.store, { [g.checkpoint]: "by a" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    await publishFiles(b.store, { [g.checkpoint]: "by b" });
    const found = await runSyncCommand(b.publication, "");
    expect(found.text).toMatch(/both changed global:/);
    const elsewhere = await runSyncCommand(b.publication, "take-remote cwd");
    expect(elsewhere).toEqual({
      text: '"cwd" is not a scope changed here and on another machine; those are: global.',
      refused: true,
    });
    const kept = await runSyncCommand(b.publication, "keep-local global");
    expect(kept).toMatchObject({ refused: false });
    // the join is pushed before the command answers
    expect(kept.text).toMatch(/^Sync: up to date with remote origin \(([0-9a-f]{12})\)\n(.|\n)*Pushed \1 to origin\.$/);
    expect(git(b.root, b.env, "show", `HEAD:${g.checkpoint}`)).toBe("by b");
  });
});
