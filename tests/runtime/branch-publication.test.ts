// BranchPublication as the person meets it (real Git stores, a bare remote): a push held behind
// another machine's commits is said once, as information, not after every run; what came in from
// the other machine is one line; a store without a remote has no sync and says how to add one.
import { afterEach, describe, expect, it } from "vitest";
import type { BranchPublication } from "../../runtime/branch-publication.ts";
import { TempDirs, cohortFixture, git } from "../support/store-fixtures.ts";
import { publishFiles, syncMachine } from "../support/sync-machines.ts";

const temps = new TempDirs();
const opened: BranchPublication[] = [];
afterEach(() => {
  for (const publication of opened.splice(0)) publication.close();
  temps.cleanup();
});
const { g, s } = cohortFixture();

describe("BranchPublication", () => {
  it("a held push is said once, as information; the other machine's changes that came in, in one line", async () => {
    const bare = temps.make("sf-branch-pub-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await syncMachine(temps, opened, { bare: bare, clone: false });
    const a0 = await publishFiles(a.store, { [g.checkpoint]: "g0" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await syncMachine(temps, opened, { bare: bare, clone: true });
    await b.open(a0);
    await b.publication.quiet();
    await publishFiles(a.store, { [g.checkpoint]: "by a" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b1 = await publishFiles(b.store, { [s.checkpoint]: "by b" });
    await b.publication.accepted(b1, false);
    b.publication.runEnd();
    await b.publication.quiet();
    b.publication.runEnd();
    await b.publication.quiet();
    const held = b.notices.filter((n) => n.text.includes("is held"));
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ level: "info" });
    const came = b.notices.filter((n) => n.text.includes("brought in another machine's changes"));
    expect(came).toEqual([{ text: expect.stringMatching(/\(remote origin; global\), joined/), level: "info" }]);
    expect(b.notices.filter((n) => n.level === "warning")).toEqual([]);
  });

  it("a store without a remote has no sync; its label says so", async () => {
    const alone = await syncMachine(temps, opened, { bare: null, clone: false });
    const r0 = await publishFiles(alone.store, { [g.checkpoint]: "g0" });
    await alone.open(r0);
    expect(alone.publication.syncView).toBeNull();
    expect(alone.publication.summary?.status).toBe("local-only");
    expect(alone.publication.label("git")).toBe("turn-end");
  });
});
