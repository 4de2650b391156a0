// BranchPublication as the person meets it (real Git stores, a bare remote): a push held behind
// another machine's commits is said once, as information, not after every run; what came in from
// the other machine is one line; a store without a remote has no sync and says how to add one.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BranchPublication } from "../../runtime/branch-publication.ts";
import type { BranchState } from "../../storage/state-store.ts";
import { openStore, type Store } from "../../storage/open-store.ts";
import { TempDirs, cohortFixture, git, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
const opened: BranchPublication[] = [];
afterEach(() => {
  for (const publication of opened.splice(0)) publication.close();
  temps.cleanup();
});
const { g, s } = cohortFixture();

async function publish(store: Store, path: string, text: string): Promise<string> {
  const basis = await store.loadCurrent([path]);
  return (await store.publish({ basis, writes: new Map([[path, Buffer.from(text)]]) })).pointer.revision;
}

async function machine(bare: string | null, clone: boolean) {
  const home = temps.make("sf-branch-pub-");
  writeFileSync(join(home, "gitconfig"), "");
  const env = gitTestEnv(join(home, "gitconfig"));
  const root = join(home, "state-flow");
  if (clone && bare) git(home, env, "clone", "-q", bare, root);
  const store = await openStore({ root, env, initGit: true });
  if (!clone && bare) git(root, env, "remote", "add", "origin", bare);
  const notices: { text: string; level: string }[] = [];
  const publication = new BranchPublication((text, level) => notices.push({ text, level: level ?? "warning" }));
  opened.push(publication);
  const open = (revision: string) =>
    publication.open(
      {
        identity: { sessionKey: "2026-01-01T00-00-00-000Z_s" },
        config: { remotePublication: "turn-end" },
        pointer: { revision },
      } as unknown as BranchState,
      store.publication,
    );
  return { store, root, env, notices, publication, open };
}

describe("BranchPublication", () => {
  it("a held push is said once, as information; the other machine's changes that came in, in one line", async () => {
    const bare = temps.make("sf-branch-pub-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const a = await machine(bare, false);
    const a0 = await publish(a.store, g.checkpoint, "g0");
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b = await machine(bare, true);
    await b.open(a0);
    await b.publication.quiet();
    await publish(a.store, g.checkpoint, "by a");
    git(a.root, a.env, "push", "-q", "origin", "HEAD");
    const b1 = await publish(b.store, s.checkpoint, "by b");
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
    const alone = await machine(null, false);
    const r0 = await publish(alone.store, g.checkpoint, "g0");
    await alone.open(r0);
    expect(alone.publication.syncView).toBeNull();
    expect(alone.publication.summary?.status).toBe("local-only");
    expect(alone.publication.label("git")).toBe("turn-end");
  });
});
