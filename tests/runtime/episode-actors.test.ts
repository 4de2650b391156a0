// The episode's actors over real stores: start, stop and the frozen restart, restore, adoption
// into Git; a failure rejects (the machine draws that edge) and leaves the binding as it was.
// Their effects on publication are seen at a remote that really blocks (an ssh command that never
// answers): which generation asks it, and that no activation waits for it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { PublicationPolicy } from "../../storage/core/codec.ts";
import { BLOCKED_URL, alive, blockingSsh, until, type BlockingSsh } from "../support/blocking-remote.ts";
import { runtimeParts, type Parts } from "../support/runtime-parts.ts";
import { git as gitIn } from "../support/store-fixtures.ts";

let parts: Parts | null = null;
const blocked: BlockingSsh[] = [];
const dirs: string[] = [];
afterEach(() => {
  parts?.dispose();
  parts = null;
  for (const remote of blocked.splice(0)) remote.killLeft();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Parts whose store root is a repository with a remote that blocks (created before the store opens
 * it; a file-only store keeps its files there until adoption commits them).
 */
function blockedParts(git: boolean, policy: PublicationPolicy = "turn-end"): { parts: Parts; ssh: BlockingSsh } {
  const dir = mkdtempSync(join(tmpdir(), "sf-actors-ssh-"));
  dirs.push(dir);
  const ssh = blockingSsh(dir);
  blocked.push(ssh);
  const env = { GIT_SSH_COMMAND: ssh.command, STATE_FLOW_REMOTE_TIMEOUT_MS: "600000" }; // a limit no test reaches
  parts = runtimeParts(git, { policy, env });
  mkdirSync(parts.root, { recursive: true });
  const withGit = { ...parts.env, PATH: process.env.PATH };
  gitIn(parts.root, withGit, "init", "-q");
  gitIn(parts.root, withGit, "remote", "add", "origin", BLOCKED_URL);
  return { parts, ssh };
}

/** Records whether a promise has settled yet. */
function track(promise: Promise<unknown>) {
  const state = { done: false };
  void promise.finally(() => (state.done = true)).catch(() => undefined);
  return state;
}

for (const git of [false, true]) {
  describe(`EpisodeActors (${git ? "Git" : "file-only"})`, () => {
    it("start binds an enabled origin; stop publishes the disabled config; the frozen restart resumes it", async () => {
      parts = runtimeParts(git);
      const { actors, binding, host } = parts;
      await actors.startStorage(false);
      expect(binding.state!.config.enabled).toBe(true);
      await actors.persistStop();
      expect(binding.state!.config.enabled).toBe(false);
      // (the episode says the stop once it is durable: notice `stopped`; the actor itself says nothing)
      expect(host.notices).toEqual([]);
      actors.freezeHandoff();
      expect(host.entries.at(-1)).toEqual({ checkpoint: { disabled: true } });
      const stopped = binding.state!.pointer.revision;
      await actors.startStorage(true);
      expect(binding.state!.config.enabled).toBe(true);
      expect(host.recordedRevisions().has(stopped)).toBe(true);
    });

    it("selectRestore restores the branch's newest revision", async () => {
      parts = runtimeParts(git);
      const { actors, binding } = parts;
      await actors.startStorage(false);
      const revision = binding.state!.pointer.revision;
      binding.state = null;
      expect(await actors.selectRestore()).toMatchObject({ kind: "revision", revision });
      expect(binding.state!.pointer.revision).toBe(revision);
    });

    it("a store that cannot be opened rejects, and nothing is bound", async () => {
      parts = runtimeParts(git);
      mkdirSync(join(parts.root, ".."), { recursive: true });
      writeFileSync(parts.root, "not a directory");
      await expect(parts.actors.startStorage(false)).rejects.toThrow();
      expect(parts.binding.state).toBeNull();
      // (restoring from it binds nothing either: a Git store's read fails, a file-only one finds no branch)
      await parts.actors.selectRestore().catch(() => undefined);
      expect(parts.binding.state).toBeNull();
    });

    it("a stop is recorded once, after its handoff: the disabled revision, then the disabled marker", async () => {
      parts = runtimeParts(git);
      const { actors, binding, host } = parts;
      await actors.startStorage(false);
      const before = host.entries.length;
      await actors.persistStop();
      expect(host.entries.length, "persisting the stop appends nothing to the branch").toBe(before);
      actors.freezeHandoff();
      expect(host.entries.slice(before)).toEqual([
        { handoff: expect.objectContaining({ working: {} }), by: host.sessionId },
        { checkpoint: { revision: binding.state!.pointer.revision, boundary: expect.any(Object) } },
        { checkpoint: { disabled: true } },
      ]);
    });

    it("a restore that cannot read its store rejects and unbinds the branch it held", async () => {
      parts = runtimeParts(git);
      const { actors, binding, root } = parts;
      await actors.startStorage(false);
      binding.store = null; // as after a reload: the store is opened again, and cannot be
      rmSync(root, { recursive: true, force: true });
      writeFileSync(root, "not a directory");
      await actors.selectRestore().catch(() => undefined);
      expect(binding.state, "no runtime of the unreadable store stays bound beside the machine").toBeNull();
    });

    it("persistStop without a bound branch rejects by name", async () => {
      parts = runtimeParts(git);
      await expect(parts.actors.persistStop()).rejects.toThrow(/no runtime is selected/);
    });
  });
}

describe("EpisodeActors and publication (a remote that really blocks)", () => {
  it("start opens the branch's publication, which asks the remote about the origin in the background", async () => {
    const { parts, ssh } = blockedParts(true);
    await parts.actors.startStorage(false);
    expect(parts.publication.label("git")).toBe("turn-end");
    expect(parts.publication.pendingTarget, "the new origin is owed").toBe(parts.binding.state!.pointer.revision);
    await until(() => ssh.contacts().length === 1, "the remote to be asked");
    const [asked] = ssh.contacts();
    parts.publication.close(); // (the generation's shutdown)
    await until(() => !alive(asked!.pid), "shutdown to kill the question");
  });

  it("under transition policy, the restart from a stop returns while its push blocks", async () => {
    const { parts } = blockedParts(true, "transition");
    const { actors } = parts;
    await actors.startStorage(false);
    await actors.persistStop();
    actors.freezeHandoff();
    const restart = track(actors.startStorage(true));
    await until(() => restart.done, "the restart to return while the remote blocks");
    expect(parts.binding.state!.config.enabled).toBe(true);
  });

  it("a restore opens the branch's publication again, which asks the remote about what is owed", async () => {
    const { parts, ssh } = blockedParts(true);
    const { actors, binding, publication } = parts;
    await actors.startStorage(false);
    const revision = binding.state!.pointer.revision;
    await until(() => ssh.contacts().length === 1, "the remote to be asked");
    publication.close(); // as a new process: no generation is open
    binding.state = null;
    expect(await actors.selectRestore()).toMatchObject({ kind: "revision", revision });
    expect(publication.pendingTarget).toBe(revision);
    await until(() => ssh.contacts().length === 2, "the restored generation to ask the remote");
  });

  it("adoption into Git hands publication to a Git generation, which asks about the adopted revision", async () => {
    const { parts, ssh } = blockedParts(false);
    const { actors, binding, publication } = parts;
    await actors.startStorage(false);
    expect(binding.store!.store.kind).toBe("file");
    expect(publication.pendingTarget, "file-only: nothing to publish").toBeNull();
    parts.env.PATH = process.env.PATH; // git is installed since
    await actors.adoptIntoGit();
    expect(binding.store!.store.kind).toBe("git");
    expect(publication.pendingTarget).toBe(binding.state!.pointer.revision);
    await until(() => ssh.contacts().length === 1, "the Git generation to ask the remote");
  });

  it("a failed adoption leaves the branch on its file-only store", async () => {
    parts = runtimeParts(false);
    const { actors, binding, host } = parts;
    await actors.startStorage(false);
    const before = binding.state!.pointer.revision;
    parts.env.PATH = process.env.PATH;
    host.appendCheckpoint = () => {
      throw new Error("the session file is not writable");
    };
    await expect(actors.adoptIntoGit()).rejects.toThrow(/not writable/);
    expect(binding.store!.store.kind, "the repository opened before the failure is not used").toBe("file");
    expect(binding.state!.pointer.revision, "nor the revision committed into it").toBe(before);
    expect(before.startsWith("file:")).toBe(true);
  });
});
