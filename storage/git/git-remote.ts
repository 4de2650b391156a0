// The publication remote of the store repository: which remote an accepted commit goes to, the push
// itself, and whether the remote already holds a commit.
//
// Remotes are the operator's: State Flow never adds one and never force-pushes. It fetches only the
// branch it publishes, into that remote's tracking ref (never the worktree, never a merge). A push that the remote
// rejects because another session sharing the repository already published newer commits on top of
// this one counts as published; anything else is reported as failed or unreachable, for the
// publication machine to retry or show. Every command that reaches the remote runs through
// remote-process.ts: no prompt, a time limit, and a remote that does not answer is a failure with
// that cause, never a wait without end.

import { stat } from "node:fs/promises";
import { join } from "node:path";
import { GitCommandError, gitFailed, type GitRunner } from "./git-runner.ts";
import { execRemote, type RemotePurpose } from "./remote-process.ts";

export interface GitPushResult {
  readonly kind: "pushed" | "local-only" | "failed" | "unreachable" | "rejected";
  readonly remote?: string;
  readonly detail?: string;
}

/**
 * What the publication remote answered about a revision: it has it on this branch (the branch is,
 * or descends from, the commit), it lacks it, there is no remote, or it could not be asked (detail:
 * why, e.g. it did not answer within the limit).
 */
export type RemoteAnswer =
  { readonly kind: "has" | "lacks" | "local-only" } | { readonly kind: "unanswered"; readonly detail: string };

/** What a fetch of the publication remote's branch found (see GitRemote.fetchBranch). */
export type FetchResult =
  | { readonly kind: "fetched"; readonly remote: string; readonly tracking: string; readonly head: string | null }
  | { readonly kind: "local-only" }
  | { readonly kind: "unanswered"; readonly remote: string; readonly detail: string };

export interface GitRemoteOptions {
  readonly runner: GitRunner;
  /** The common Git directory, whose config names the remotes. */
  readonly commonDir: string;
  /** The branch HEAD names (`refs/heads/<b>`); throws on a detached HEAD. */
  readonly headBranch: () => Promise<string>;
  /** Limits of remote commands in milliseconds (default: remote-process.ts, or STATE_FLOW_REMOTE_TIMEOUT_MS). */
  readonly timeoutMs?: Partial<Record<RemotePurpose, number>>;
}

export class GitRemote {
  private readonly runner: GitRunner;
  private readonly commonDir: string;
  private readonly headBranch: () => Promise<string>;
  private readonly timeoutMs: Partial<Record<RemotePurpose, number>>;
  private remoteCache:
    { readonly stamp: string; readonly ref: string; readonly remote: Promise<string | null> } | undefined;

  constructor(options: GitRemoteOptions) {
    this.runner = options.runner;
    this.commonDir = options.commonDir;
    this.headBranch = options.headBranch;
    this.timeoutMs = options.timeoutMs ?? {};
  }

  /** Runs a command that reaches the remote (no prompt, killed at its limit). */
  private remoteCommand(args: readonly string[], purpose: RemotePurpose, signal?: AbortSignal): Promise<Buffer> {
    const timeoutMs = this.timeoutMs[purpose];
    return execRemote(this.runner, args, {
      purpose,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(signal ? { signal } : {}),
    });
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

  /**
   * Fetches the publication remote's copy of the branch into its remote-tracking ref
   * (`refs/remotes/<remote>/<branch>`): objects and that one ref, nothing else — no worktree, no merge, no tags,
   * no maintenance run. `head` is the fetched commit, null when the remote has no such branch yet.
   */
  async fetchBranch(signal?: AbortSignal): Promise<FetchResult> {
    const remote = await this.publicationRemote();
    if (remote === null) return { kind: "local-only" };
    const ref = await this.headBranch();
    const tracking = `refs/remotes/${remote}/${ref.slice("refs/heads/".length)}`;
    const args = ["-c", "gc.auto=0", "-c", "maintenance.auto=false", "fetch", "--quiet", "--no-tags"];
    args.push("--no-write-fetch-head", "--no-recurse-submodules", remote, `+${ref}:${tracking}`);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.remoteCommand(args, "fetch", signal);
        break;
      } catch (error) {
        const stderr = error instanceof GitCommandError ? error.stderr : String(error);
        if (/couldn't find remote ref/i.test(stderr)) return { kind: "fetched", remote, tracking, head: null };
        // Another fetch (another session, or one a killed process left running) updated the tracking ref at
        // the same moment: once it is done, fetching again is what it needs.
        if (attempt < 2 && /cannot lock ref|but expected|\.lock': File exists/i.test(stderr) && !signal?.aborted) {
          await new Promise((done) => setTimeout(done, 300));
          continue;
        }
        return { kind: "unanswered", remote, detail: stderr.trim() || `git fetch ${remote} failed` };
      }
    }
    const head = (await this.runner.execText(["rev-parse", "--verify", "--quiet", tracking]).catch(() => "")).trim();
    return { kind: "fetched", remote, tracking, head: head === "" ? null : head };
  }

  /** Pushes an existing accepted commit to the branch on the publication remote. Never re-applies anything. */
  async pushRevision(revision: string, signal?: AbortSignal): Promise<GitPushResult> {
    const remote = await this.publicationRemote();
    if (remote === null) return { kind: "local-only" };
    const ref = await this.headBranch();
    try {
      await this.remoteCommand(["push", "--quiet", remote, `${revision}:${ref}`], "push", signal);
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
      // The remote holds commits this branch lacks (another machine published): retrying cannot help, a sync can.
      if (/non-fast-forward|fetch first|\[rejected\]/i.test(stderr))
        return { kind: "rejected", remote, detail: stderr.trim() };
      return { kind: "failed", remote, detail: stderr.trim() };
    }
  }

  /**
   * Whether the publication remote already has `revision` on this branch (its branch there is, or
   * descends from, the commit): true / false, null without a remote or when the remote cannot be
   * asked. One `ls-remote` (plus a local `merge-base`), no push.
   */
  async remoteHas(revision: string): Promise<boolean | null> {
    const answer = await this.askRemote(revision);
    return answer.kind === "has" ? true : answer.kind === "lacks" ? false : null;
  }

  /**
   * What the publication remote answers about `revision` (see RemoteAnswer), with the cause when it
   * cannot be asked. Aborting `signal` kills the question (the caller no longer wants the answer).
   */
  async askRemote(revision: string, signal?: AbortSignal): Promise<RemoteAnswer> {
    const remote = await this.publicationRemote();
    if (remote === null) return { kind: "local-only" };
    const ref = await this.headBranch();
    const head = await this.remoteHead(remote, ref, signal);
    if ("error" in head) return { kind: "unanswered", detail: head.error };
    if (head.head !== null) await this.learn(head.head, signal);
    return head.head !== null && (await this.isAncestor(revision, head.head)) ? { kind: "has" } : { kind: "lacks" };
  }

  /** The remote's commit for `ref` (null: the remote has no such branch), or why the remote could not be asked. */
  private async remoteHead(
    remote: string,
    ref: string,
    signal?: AbortSignal,
  ): Promise<{ readonly head: string | null } | { readonly error: string }> {
    try {
      const out = (await this.remoteCommand(["ls-remote", remote, ref], "ask", signal)).toString("utf8");
      const head = out.split("\n")[0]?.split("\t")[0]?.trim() ?? "";
      return { head: /^[0-9a-f]{40,64}$/.test(head) ? head : null };
    } catch (error) {
      const detail = error instanceof GitCommandError ? error.stderr.trim() : String(error);
      return { error: detail || `git ls-remote ${remote} failed` };
    }
  }

  /**
   * Another machine's commit is unknown here until fetched: without it "is this revision contained in the
   * remote's branch?" cannot be answered, and a revision the remote holds would look lacking.
   */
  private async learn(commit: string, signal?: AbortSignal): Promise<void> {
    const known = await this.runner.exec(["cat-file", "-e", `${commit}^{commit}`]).then(
      () => true,
      () => false,
    );
    if (!known) await this.fetchBranch(signal).catch(() => undefined);
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
    if (!("head" in head) || head.head === null) return false;
    await this.learn(head.head);
    return this.isAncestor(revision, head.head);
  }
}
