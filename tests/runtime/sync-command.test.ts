// /state-flow-sync over a real Git store on a bare remote: fetch-and-report, a choice refused with
// what to run instead (and following it works), a scope named that no conflict holds or that names
// several, and re-applying this machine's transitions on the remote's state.
import { afterEach, describe, expect, it } from "vitest";
import type { BranchPublication } from "../../runtime/branch-publication.ts";
import { runSyncCommand } from "../../runtime/sync-command.ts";
import { parseScopeStream } from "../../storage/core/codec.ts";
import { streamState } from "../../storage/core/temporal.ts";
import { cwdKey } from "../../storage/layout.ts";
import type { Store } from "../../storage/open-store.ts";
import { StateStore } from "../../storage/state-store.ts";
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

describe("/state-flow-sync re-apply", () => {
  it("re-applies this machine's transitions on the remote's state; an ambiguous scope is refused", async () => {
    const bare = temps.make("sf-sync-cmd-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const identity = (name: string, cwd: string) => ({
      cwd,
      cwdKey: cwdKey(cwd),
      sessionId: `${name}${cwd}`,
      sessionKey: `2026-12-06T00-00-00-000Z_${name}${cwdKey(cwd)}`,
    });
    /** Accepts one transition on global and the cwd as a session in `cwd` would. */
    const commit = async (store: Store, name: string, cwd: string, value: string) => {
      const state = new StateStore(store, identity(name, cwd));
      const runtime = await state.start(null, "turn-end");
      await state.commit(
        runtime,
        { global: { working: { [name]: value } }, cwd: { working: { [name]: value } } },
        value,
      );
    };
    const a = await syncMachine(temps, opened, { bare, clone: false, name: "a" });
    await commit(a.store, "a", "/p1", "0");
    await commit(a.store, "a", "/p2", "0");
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await syncMachine(temps, opened, { bare, clone: true, name: "b" });
    await commit(a.store, "a", "/p1", "1");
    await commit(a.store, "a", "/p2", "1");
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    await commit(b.store, "b", "/p1", "1");
    await commit(b.store, "b", "/p2", "1");
    await b.open(git(b.root, b.env, "rev-parse", "HEAD").trim());

    const found = await runSyncCommand(b.publication, "");
    expect(found.text).toMatch(/both changed cwd --p1--, cwd --p2--, global:/);
    expect(found.text).toMatch(/\/state-flow-sync re-apply \[scope\] +applies this machine's changes again/);
    const ambiguous = await runSyncCommand(b.publication, "take-remote cwd");
    expect(ambiguous).toEqual({
      text:
        '"cwd" names 2 scopes changed here and on another machine: cwd --p1--, cwd --p2--. Name one of them ' +
        "whole, e.g. /state-flow-sync take-remote cwd --p1--.",
      refused: true,
    });
    // What it says works: one cwd takes the remote's values, the rest re-applies this machine's on the remote's.
    expect(await runSyncCommand(b.publication, "take-remote cwd --p1--")).toMatchObject({ refused: false });
    const reapplied = await runSyncCommand(b.publication, "re-apply");
    expect(reapplied.refused).toBe(false);
    expect(reapplied.text).toMatch(/^Sync: up to date with remote origin \(([0-9a-f]{12})\)\n/);
    expect(reapplied.text).toContain("Re-applied on the remote's global: 1 transition of this machine");
    expect(reapplied.text).toContain("Re-applied on the remote's cwd --p2--: 1 transition of this machine");
    expect(reapplied.text).toMatch(/Pushed [0-9a-f]{12} to origin\.$/);
    const working = (scope: "global" | "cwd", dir: string) => {
      const at = (file: string) => Buffer.from(git(b.root, b.env, "show", `HEAD:${dir}${file}`));
      const stream = parseScopeStream(scope, { checkpoint: at("checkpoint.json"), patches: at("patches.jsonl") });
      return streamState(stream).working;
    };
    expect(working("global", "")).toEqual({ a: "1", b: "1" });
    expect(working("cwd", `${cwdKey("/p1")}/`)).toEqual({ a: "1" });
    expect(working("cwd", `${cwdKey("/p2")}/`)).toEqual({ a: "1", b: "1" });
    expect(git(a.root, a.env, "ls-remote", bare).split("\n")[0]!.split("\t")[0]).toBe(
      git(b.root, b.env, "rev-parse", "HEAD").trim(),
    );
  });
});
