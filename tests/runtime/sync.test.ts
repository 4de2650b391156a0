// The sync as the runtime drives it (BranchPublication over real Git stores): two machines, each its
// own store, one bare remote. Opening a publication fetches in the background and fast-forwards a
// machine that is behind, saying so in one line; a push the remote rejects waits for the sync, which
// joins the lines scope by scope and pushes the joined head; a scope changed on both sides waits for
// the person's side, and following the advice works.
import { afterEach, describe, expect, it } from "vitest";
import type { BranchPublication } from "../../runtime/branch-publication.ts";
import { arrivalNotice } from "../../runtime/sync-report.ts";
import { TempDirs, cohortFixture, git } from "../support/store-fixtures.ts";
import { publishFiles, syncMachine } from "../support/sync-machines.ts";

const temps = new TempDirs();
const opened: BranchPublication[] = [];
afterEach(() => {
  for (const publication of opened.splice(0)) publication.close();
  temps.cleanup();
});
const { g, s } = cohortFixture();

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

describe("sync through the branch's publication (real git, two machines)", () => {
  it("a machine behind is fast-forwarded in the background at open and says so in one line", async () => {
    const bare = temps.make("sf-sync-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await syncMachine(temps, opened, { bare, clone: false, name: "a" });
    const a0 = await publishFiles(a.store, { [g.checkpoint]: "g0", [g.meta]: "m0" });
    await a.open(a0);
    await a.publication.accepted(a0, false);
    a.publication.runEnd();
    await until(() => a.publication.syncView?.state === "equal", "a's push (the sync then knows it is equal)");
    const b = await syncMachine(temps, opened, { bare, clone: true, name: "b" });
    const a1 = await publishFiles(a.store, { [g.checkpoint]: "g1 from a" });
    await a.publication.accepted(a1, false);
    a.publication.runEnd();
    await until(() => git(bare, a.env, "rev-parse", "HEAD").trim() === a1, "a1 on the remote");
    await b.open(a0);
    await until(() => b.notices.length > 0, "b's arrival notice");
    expect(b.notices.map((n) => n.text)).toEqual([
      arrivalNotice({ revision: a1, remote: "origin", scopes: ["global"] }, false),
    ]);
    expect(b.notices[0]?.text).toMatch(/another machine's changes \(remote origin; global\), fast-forwarded/);
    expect(git(b.root, b.env, "rev-parse", "HEAD").trim()).toBe(a1);
    expect(b.publication.syncView?.state).toBe("equal");
  });

  it("a rejected push waits, the sync joins both machines' scopes and the joined head is pushed", async () => {
    const bare = temps.make("sf-sync-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await syncMachine(temps, opened, { bare, clone: false, name: "a" });
    const a0 = await publishFiles(a.store, { [g.checkpoint]: "g0" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await syncMachine(temps, opened, { bare, clone: true, name: "b" });
    await b.open(a0);
    await until(() => b.publication.syncView?.state === "equal", "b's first sync");
    const a1 = await publishFiles(a.store, { [g.checkpoint]: "g1 from a" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b1 = await publishFiles(b.store, { [s.checkpoint]: "b's own session" });
    await b.publication.accepted(b1, false);
    b.publication.runEnd();
    await until(() => b.notices.some((n) => n.text.includes("joined")), "b's join");
    await until(() => b.publication.summary?.status === "confirmed", "the joined head's push");
    const head = git(bare, b.env, "rev-parse", "HEAD").trim();
    expect(git(b.root, b.env, "rev-list", "--parents", "-n1", head).trim().split(" ").slice(1)).toEqual([b1, a1]);
    expect(git(bare, b.env, "show", `HEAD:${g.checkpoint}`)).toBe("g1 from a");
    expect(git(bare, b.env, "show", `HEAD:${s.checkpoint}`)).toBe("b's own session");
    expect(b.publication.pending).toBeNull();
  });

  it("a scope both machines changed waits for a side; take-remote joins and pushes", async () => {
    const bare = temps.make("sf-sync-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await syncMachine(temps, opened, { bare, clone: false, name: "a" });
    const a0 = await publishFiles(a.store, { [g.checkpoint]: "g0" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await syncMachine(temps, opened, { bare, clone: true, name: "b" });
    await b.open(a0);
    await until(() => b.publication.syncView?.state === "equal", "b's first sync");
    await publishFiles(a.store, { [g.checkpoint]: "global by a" });
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b1 = await publishFiles(b.store, { [g.checkpoint]: "global by b" });
    await b.publication.accepted(b1, false);
    b.publication.runEnd();
    await until(() => b.publication.syncView?.state === "diverged", "b's divergence");
    const view = b.publication.syncView!;
    expect(view.open.map((c) => c.scope)).toEqual(["global"]);
    expect(b.publication.pending).toMatchObject({ revision: b1 });
    b.publication.runEnd(); // not pushed again after a run
    expect(b.publication.summary?.status).toBe("waiting");
    const after = await b.publication.choose("remote");
    expect(after?.state).toBe("ahead");
    await until(() => b.publication.summary?.status === "confirmed", "the joined head's push");
    expect(git(bare, b.env, "show", `HEAD:${g.checkpoint}`)).toBe("global by a");
    expect(b.publication.pending).toBeNull();
  });
});
