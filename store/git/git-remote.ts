// The publication remote of the store repository: which remote an accepted commit goes to, the push
// itself, and whether the remote already holds a commit.
//
// Remotes are the operator's: State Flow never adds, fetches or force-pushes. A push that the remote
// rejects because another session sharing the repository already published newer commits on top of
// this one counts as published; anything else is reported as failed or unreachable, for the
// publication machine to retry or show.

import { stat } from "node:fs/promises";
import { join } from "node:path";
import { GitCommandError, gitFailed, type GitRunner } from "./git-runner.ts";

export interface GitPushResult {
  readonly kind: "pushed" | "local-only" | "failed" | "unreachable";
  readonly remote?: string;
  readonly detail?: string;
}

export interface GitRemoteOptions {
  readonly runner: GitRunner;
  /** The common Git directory, whose config names the remotes. */
  readonly commonDir: string;
  /** The branch HEAD names (`refs/heads/<b>`); throws on a detached HEAD. */
  readonly headBranch: () => Promise<string>;
}

export class GitRemote {
  private readonly runner: GitRunner;
  private readonly commonDir: string;
  private readonly headBranch: () => Promise<string>;
  private remoteCache:
    { readonly stamp: string; readonly ref: string; readonly remote: Promise<string | null> } | undefined;

  constructor(options: GitRemoteOptions) {
    this.runner = options.runner;
    this.commonDir = options.commonDir;
    this.headBranch = options.headBranch;
  }

  /** Size and mtime of the repository's config file: a remote added or removed changes it. */
  async configStamp(): Promise<string | null> {
    const info = await stat(join(this.commonDir, "config")).catch(() => null);
    return info ? `${info.size}:${info.mtimeMs}` : null;
  }

  /**
   * The remote to publish to: branch.<b>.remote, else `origin`, else the only remote; null = local-only.
   * One process, unless the config file and the branch are what they were at the last answer.
   */
  async publicationRemote(): Promise<string | null> {
    const ref = await this.headBranch();
    // Remotes live in the repository's config: unchanged file, same branch, same answer (no process).
    const stamp = await this.configStamp();
    const cached = this.remoteCache;
    if (cached && stamp !== null && cached.stamp === stamp && cached.ref === ref) return cached.remote;
    // The read in flight is shared (a restore starts it early, the publication driver awaits it).
    const remote = this.readPublicationRemote(ref);
    const entry = stamp === null ? undefined : { stamp, ref, remote };
    this.remoteCache = entry;
    remote.catch(() => {
      if (this.remoteCache === entry) this.remoteCache = undefined;
    });
    return remote;
  }

  private async readPublicationRemote(ref: string): Promise<string | null> {
    const branch = ref.slice("refs/heads/".length);
    let out = "";
    try {
      out = await this.runner.execText(["config", "-z", "--get-regexp", "^(remote\\..*\\.url|branch\\..*\\.remote)$"]);
    } catch (error) {
      if (!(error instanceof GitCommandError && error.exitCode === 1))
        throw gitFailed("Reading remote configuration", error);
    }
    const remotes: string[] = [];
    let branchRemote: string | undefined;
    for (const record of out.split("\0")) {
      const nl = record.indexOf("\n");
      if (nl < 0) continue;
      const key = record.slice(0, nl);
      const value = record.slice(nl + 1);
      const remote = /^remote\.(.+)\.url$/.exec(key);
      if (remote?.[1]) remotes.push(remote[1]);
      if (key === `branch.${branch}.remote`) branchRemote = value;
    }
    if (branchRemote && remotes.includes(branchRemote)) return branchRemote;
    if (remotes.includes("origin")) return "origin";
    return remotes.length === 1 ? (remotes[0] ?? null) : null;
  }

  /** Pushes an existing accepted commit to the branch on the publication remote. Never re-applies anything. */
  async pushRevision(revision: string): Promise<GitPushResult> {
    const remote = await this.publicationRemote();
    if (remote === null) return { kind: "local-only" };
    const ref = await this.headBranch();
    try {
      await this.runner.exec(["push", "--quiet", remote, `${revision}:${ref}`]);
      return { kind: "pushed", remote };
    } catch (error) {
      const stderr = error instanceof GitCommandError ? error.stderr : String(error);
      if (
        /bad object|does not match any|not a valid|unable to push to unqualified destination|src refspec/i.test(stderr)
      ) {
        return { kind: "unreachable", remote, detail: stderr.trim() };
      }
      // Another session sharing this repository may have published newer commits on top of this
      // one: a revision the remote's branch already contains is published, not pending.
      if (
        /non-fast-forward|fetch first|\[rejected\]/i.test(stderr) &&
        (await this.remoteContains(remote, ref, revision))
      ) {
        return { kind: "pushed", remote };
      }
      return { kind: "failed", remote, detail: stderr.trim() };
    }
  }

  /**
   * Whether the publication remote already has `revision` on this branch (its branch there is, or
   * descends from, the commit): true / false, null without a remote or when the remote cannot be
   * asked. One `ls-remote` (plus a local `merge-base`), no push.
   */
  async remoteHas(revision: string): Promise<boolean | null> {
    const remote = await this.publicationRemote();
    if (remote === null) return null;
    const ref = await this.headBranch();
    const head = await this.remoteHead(remote, ref);
    if (head === undefined) return null;
    return head !== null && (await this.isAncestor(revision, head));
  }

  /** The remote's commit for `ref`: null when the remote has no such branch, undefined when it cannot be asked. */
  private async remoteHead(remote: string, ref: string): Promise<string | null | undefined> {
    try {
      const line = (await this.runner.execText(["ls-remote", remote, ref])).split("\n")[0] ?? "";
      const head = line.split("\t")[0]?.trim() ?? "";
      return /^[0-9a-f]{40,64}$/.test(head) ? head : null;
    } catch {
      return undefined;
    }
  }

  private async isAncestor(revision: string, head: string): Promise<boolean> {
    try {
      await this.runner.exec(["merge-base", "--is-ancestor", revision, head]);
      return true;
    } catch {
      return false; // not an ancestor, or the remote's commit is unknown here
    }
  }

  /** Whether `<remote>`'s `<ref>` is a commit this repository has that descends from (or is) `revision`. */
  private async remoteContains(remote: string, ref: string, revision: string): Promise<boolean> {
    const head = await this.remoteHead(remote, ref);
    return typeof head === "string" && (await this.isAncestor(revision, head));
  }
}
