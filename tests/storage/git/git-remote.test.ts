import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitRemote } from "../../../storage/git/git-remote.ts";
import { GitRunner, findGitExecutable, type GitProcessCounter } from "../../../storage/git/git-runner.ts";
import { BLOCKED_URL, alive, blockingSsh, until, type BlockingSsh } from "../../support/blocking-remote.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
const blocked: BlockingSsh[] = [];
afterEach(() => {
  for (const remote of blocked.splice(0)) remote.killLeft();
  temps.cleanup();
});
const GIT = findGitExecutable()!;

/** A repository on branch `main` with one commit, a bare remote beside it (not configured) and a GitRemote. */
function repository(extraEnv: Record<string, string> = {}, timeoutMs?: { ask?: number; push?: number }) {
  const root = temps.make("sf-remote-");
  const bare = temps.make("sf-remote-bare-");
  const config = join(temps.make("sf-remote-cfg-"), "gitconfig");
  writeFileSync(config, "");
  const env = gitTestEnv(config);
  git(root, env, "init", "-q", "-b", "main");
  git(bare, env, "init", "-q", "--bare");
  const commit = (message: string) => {
    writeFileSync(join(root, "f"), message);
    git(root, env, "add", "f");
    git(root, env, "commit", "-q", "-m", message);
    return git(root, env, "rev-parse", "HEAD").trim();
  };
  const first = commit("first");
  const counter: GitProcessCounter = { count: 0 };
  const runner = new GitRunner({ cwd: root, env: { ...env, ...extraEnv }, binary: GIT, counter });
  const remote = new GitRemote({
    runner,
    commonDir: join(root, ".git"),
    headBranch: async () => "refs/heads/main",
    ...(timeoutMs ? { timeoutMs } : {}),
  });
  return { root, bare, env, commit, first, counter, remote };
}

describe("git remote", () => {
  it("without a remote the store is local-only: nothing is pushed and nothing is asked", async () => {
    const { remote, first, counter } = repository();
    expect(await remote.publicationRemote()).toBeNull();
    expect(await remote.pushRevision(first)).toEqual({ kind: "local-only" });
    expect(await remote.remoteHas(first)).toBeNull();
    expect(await remote.askRemote(first)).toEqual({ kind: "local-only" });
    expect(counter.count).toBe(1); // one config read; the config file did not change after it
  });

  it("chooses the branch's remote, else origin, else the only remote, else none", async () => {
    const { root, bare, env, remote } = repository();
    git(root, env, "remote", "add", "backup", bare);
    expect(await remote.publicationRemote()).toBe("backup"); // the only one
    git(root, env, "remote", "add", "mirror", bare);
    expect(await remote.publicationRemote()).toBeNull(); // two, neither origin nor the branch's
    git(root, env, "remote", "add", "origin", bare);
    expect(await remote.publicationRemote()).toBe("origin");
    git(root, env, "config", "branch.main.remote", "mirror");
    expect(await remote.publicationRemote()).toBe("mirror");
    git(root, env, "config", "branch.main.remote", "gone"); // names no remote: the rules after it decide
    expect(await remote.publicationRemote()).toBe("origin");
  });

  it("asks git again only when the config file changed", async () => {
    const { root, bare, env, remote, counter } = repository();
    git(root, env, "remote", "add", "origin", bare);
    expect(await remote.publicationRemote()).toBe("origin");
    expect(await remote.publicationRemote()).toBe("origin");
    expect(counter.count).toBe(1);
    git(root, env, "remote", "remove", "origin");
    expect(await remote.publicationRemote()).toBeNull();
    expect(counter.count).toBe(2);
  });

  it("pushes a commit, knows the remote has it, and counts an older one the remote contains as pushed", async () => {
    const { root, bare, env, commit, first, remote } = repository();
    git(root, env, "remote", "add", "origin", bare);
    expect(await remote.remoteHas(first)).toBe(false); // the remote has no such branch yet
    const second = commit("second");
    expect(await remote.pushRevision(second)).toEqual({ kind: "pushed", remote: "origin" });
    expect(git(bare, env, "rev-parse", "main").trim()).toBe(second);
    expect([await remote.remoteHas(first), await remote.remoteHas(second)]).toEqual([true, true]);
    expect(await remote.pushRevision(first)).toEqual({ kind: "pushed", remote: "origin" });
    expect(git(bare, env, "rev-parse", "main").trim()).toBe(second); // never moved back
    const third = commit("third");
    expect(await remote.remoteHas(third)).toBe(false);
  });

  it("reports a commit this repository lacks as unreachable, and an unusable remote as failed", async () => {
    const { root, bare, env, first, remote } = repository();
    git(root, env, "remote", "add", "origin", bare);
    expect(await remote.pushRevision("1".repeat(40))).toMatchObject({ kind: "unreachable", remote: "origin" });
    expect(git(bare, env, "for-each-ref").trim()).toBe(""); // nothing was pushed
    git(root, env, "remote", "set-url", "origin", join(root, "no-such-remote"));
    const failed = await remote.pushRevision(first);
    expect(failed).toMatchObject({ kind: "failed", remote: "origin" });
    expect(failed.detail).toMatch(/no-such-remote/);
    expect(await remote.remoteHas(first)).toBeNull(); // the remote cannot be asked
    const answer = await remote.askRemote(first);
    expect(answer).toMatchObject({ kind: "unanswered", detail: expect.stringMatching(/no-such-remote/) });
  });

  it("a remote that does not answer: the question and the push fail at their limit, naming it", async () => {
    const ssh = blockingSsh(temps.make("sf-remote-ssh-"));
    blocked.push(ssh);
    const { root, env, first, remote } = repository({ GIT_SSH_COMMAND: ssh.command }, { ask: 1000, push: 1200 });
    git(root, env, "remote", "add", "origin", BLOCKED_URL);
    expect(await remote.askRemote(first)).toEqual({
      kind: "unanswered",
      detail: expect.stringMatching(/^the remote origin did not answer within 1 s, so git ls-remote was stopped/),
    });
    const pushed = await remote.pushRevision(first);
    expect(pushed).toMatchObject({ kind: "failed", remote: "origin" });
    expect(pushed.detail).toMatch(/^the remote origin did not answer within 1\.2 s, so git push was stopped/);
    expect(ssh.contacts().map((c) => c.args.split(" ").slice(0, 2).join(" "))).toEqual([
      "-o BatchMode=yes",
      "-o BatchMode=yes",
    ]);
    const killed = () => ssh.contacts().every((c) => !alive(c.pid));
    await until(killed, "each blocked ssh to be killed at its limit");
  });
});
