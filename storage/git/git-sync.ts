// Several machines, one remote (git as the distributed engine): where the store's branch stands
// against the publication remote's, and the two ways a fetched line comes in. Nothing here merges
// a semantic value: a fast-forward moves the branch to commits the remote already has, and a
// diverged line is joined scope by scope (a scope changed on one side only takes that side; one
// changed on both is a named conflict until the person chooses a side for it). Both go through the
// store's journaled publication (git-publication.ts), so a kill at any step leaves the old branch
// or the new one, never a mix, and what arrives is written 0600 in 0700 folders like every
// publication. State Flow writes the two-parent commit itself; git never line-merges a store file.

import { CHECKPOINT_FILE, CONFIG_FILE, META_FILE, PATCHES_FILE, parseScopeStream } from "../core/codec.ts";
import { canonicalJson, type JsonObject } from "../core/json.ts";
import { streamState } from "../core/temporal.ts";
import type { PublishReceipt, PublishRequest, StorePointer, CohortSnapshot } from "../backend.ts";
import { StoreError } from "../store-error.ts";
import { GitCommandError, type GitRunner } from "./git-runner.ts";
import type { FetchResult } from "./git-remote.ts";
import { reapplyScope, type Reapplied, type ReapplySource } from "./reapply.ts";

/** Where the store's branch stands against the publication remote's, after a fetch. */
export type Standing =
  | { readonly kind: "local-only" }
  | { readonly kind: "unreachable"; readonly remote: string; readonly detail: string }
  | { readonly kind: "equal"; readonly remote: string; readonly head: string }
  /** The remote lacks commits of this branch (or the branch): a push brings them. */
  | { readonly kind: "ahead"; readonly remote: string; readonly local: string; readonly remoteHead: string | null }
  | { readonly kind: "behind"; readonly remote: string; readonly local: string | null; readonly remoteHead: string }
  | {
      readonly kind: "diverged";
      readonly remote: string;
      readonly local: string;
      readonly remoteHead: string;
      readonly base: string;
    }
  | { readonly kind: "unrelated"; readonly remote: string; readonly local: string; readonly remoteHead: string };

/** The part of the store a path belongs to: a scope's folder, or a file that is not a scope's. */
export function scopeOfPath(path: string): string {
  const parts = path.split("/");
  const name = parts[parts.length - 1] ?? "";
  if (![CHECKPOINT_FILE, PATCHES_FILE, META_FILE, CONFIG_FILE].includes(name)) return `file ${path}`;
  if (parts.length === 1) return "global";
  if (parts.length === 2) return `cwd ${parts[0]}`;
  return `session ${parts.slice(0, -1).join("/")}`;
}

/** A scope changed on both sides since the merge base (and not to the same bytes). */
export interface ScopeConflict {
  readonly scope: string;
  readonly localPaths: readonly string[];
  readonly remotePaths: readonly string[];
  /** A global or cwd scope: the state paths (`working.note`, `response`) each side changed since the base. */
  readonly localChanges?: readonly string[];
  readonly remoteChanges?: readonly string[];
}

/** How a diverged (or unrelated) line joins: which scopes come from the remote, which conflict. */
export interface JoinPlan {
  /** Scopes the remote changed and this branch did not: taken from the remote. */
  readonly fromRemote: readonly string[];
  /** Scopes this branch changed and the remote did not: kept. */
  readonly kept: readonly string[];
  readonly conflicts: readonly ScopeConflict[];
  /** Whether every conflicting local scope holds no accepted transition (only what a start wrote). */
  readonly localStartOnly: boolean;
}

/**
 * A person's choice for a conflicting scope: this branch's side, the remote's, or this branch's transitions
 * re-applied as new transitions on top of the remote's state (reapply.ts).
 */
export type SideChoice = "local" | "remote" | "reapply";

/** A join's receipt, with what became of this machine's transitions in each re-applied scope. */
export interface JoinReceipt extends PublishReceipt {
  readonly reapplied: Readonly<Record<string, Omit<Reapplied, "writes">>>;
}

export interface GitSyncDeps {
  readonly runner: GitRunner;
  readonly objectFormat: "sha1" | "sha256";
  head(): Promise<{ ref: string; revision: string | null }>;
  loadRevision(pointer: StorePointer, paths: readonly string[]): Promise<CohortSnapshot>;
  publish(request: PublishRequest): Promise<PublishReceipt>;
}

const EMPTY_TREE = {
  sha1: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
  sha256: "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
} as const;

/** The `section.key` paths (and `response`) that differ between two scope states (null: an empty scope). */
export function changedStatePaths(
  before: { artifacts: JsonObject; contract: JsonObject; working: JsonObject; response: string } | null,
  after: { artifacts: JsonObject; contract: JsonObject; working: JsonObject; response: string } | null,
): string[] {
  const changed: string[] = [];
  for (const section of ["artifacts", "contract", "working"] as const) {
    const b = before?.[section] ?? {};
    const a = after?.[section] ?? {};
    for (const key of new Set([...Object.keys(b), ...Object.keys(a)])) {
      const x = b[key];
      const y = a[key];
      if (x === undefined || y === undefined ? x !== y : canonicalJson(x) !== canonicalJson(y))
        changed.push(`${section}.${key}`);
    }
  }
  if ((before?.response ?? "") !== (after?.response ?? "")) changed.push("response");
  return changed;
}

export class GitSync {
  private readonly deps: GitSyncDeps;

  constructor(deps: GitSyncDeps) {
    this.deps = deps;
  }

  /** Classifies the branch against what a fetch found. Local git processes only (merge-base). */
  async standing(fetched: FetchResult): Promise<Standing> {
    if (fetched.kind === "local-only") return fetched;
    if (fetched.kind === "unanswered") return { kind: "unreachable", remote: fetched.remote, detail: fetched.detail };
    const { remote, head: remoteHead } = fetched;
    const local = (await this.deps.head()).revision;
    if (remoteHead === null) {
      if (local === null) return { kind: "equal", remote, head: "" };
      return { kind: "ahead", remote, local, remoteHead: null };
    }
    if (local === null) return { kind: "behind", remote, local: null, remoteHead };
    if (local === remoteHead) return { kind: "equal", remote, head: local };
    const base = await this.mergeBase(local, remoteHead);
    if (base === null) return { kind: "unrelated", remote, local, remoteHead };
    if (base === local) return { kind: "behind", remote, local, remoteHead };
    if (base === remoteHead) return { kind: "ahead", remote, local, remoteHead };
    return { kind: "diverged", remote, local, remoteHead, base };
  }

  /**
   * Behind: the branch moves to the fetched commit through the journaled publication (files, index and
   * branch together). Refused as stale-basis when the branch moved since the fetch (another session
   * accepted a cohort: the lines diverged) or a live file is not what the branch holds.
   */
  async fastForward(local: string, remoteHead: string, remote: string): Promise<PublishReceipt> {
    const paths = await this.changedPaths(local, remoteHead);
    const tree = (await this.deps.runner.execText(["rev-parse", `${remoteHead}^{tree}`])).trim();
    return this.bringIn(local, paths, remoteHead, {
      parents: [remoteHead],
      reuse: { revision: remoteHead, tree },
      message: `state-flow: fast-forward to ${remote} (${remoteHead.slice(0, 12)})`,
    });
  }

  /** Which scopes each side changed since the merge base (the empty tree for unrelated lines). */
  async plan(local: string, remoteHead: string, base: string | null): Promise<JoinPlan> {
    const from = base ?? EMPTY_TREE[this.deps.objectFormat];
    const [localPaths, remotePaths] = await Promise.all([
      this.changedPaths(from, local),
      this.changedPaths(from, remoteHead),
    ]);
    const bySide = (paths: readonly string[]) => {
      const scopes = new Map<string, string[]>();
      for (const path of paths) scopes.set(scopeOfPath(path), [...(scopes.get(scopeOfPath(path)) ?? []), path]);
      return scopes;
    };
    const mine = bySide(localPaths);
    const theirs = bySide(remotePaths);
    const fromRemote: string[] = [];
    const kept: string[] = [];
    const conflicts: ScopeConflict[] = [];
    for (const [scope, paths] of theirs) {
      const own = mine.get(scope);
      if (!own) fromRemote.push(scope);
      else if (!(await this.sameScope(local, remoteHead, [...new Set([...own, ...paths])]))) {
        const changes = await this.stateChanges(scope, base, local, remoteHead).catch(() => null);
        conflicts.push({ scope, localPaths: own, remotePaths: paths, ...(changes ?? {}) });
      }
    }
    for (const scope of mine.keys()) if (!theirs.has(scope)) kept.push(scope);
    const localPatches = conflicts.flatMap((c) => c.localPaths).filter((p) => p.endsWith(PATCHES_FILE));
    const snapshot = await this.deps.loadRevision({ revision: local }, localPatches);
    const localStartOnly = [...snapshot.files.values()].every((bytes) => bytes === null || bytes.length === 0);
    return { fromRemote, kept, conflicts, localStartOnly };
  }

  /**
   * Joins the fetched line: one commit with both heads as parents whose tree is this branch's, with the
   * remote's files for the scopes the remote alone changed and for conflicting scopes chosen "remote", and
   * this branch's transitions re-applied on the remote's state for those chosen "reapply". A conflicting
   * scope without a choice refuses the join (nothing written), as does a re-apply the remote's state refuses.
   */
  async join(
    standing: { readonly local: string; readonly remoteHead: string; readonly remote: string },
    plan: JoinPlan,
    choices: ReadonlyMap<string, SideChoice>,
  ): Promise<JoinReceipt> {
    const open = plan.conflicts.filter((c) => !choices.has(c.scope));
    if (open.length > 0)
      throw new StoreError(
        "sync-conflict",
        `Cannot join ${standing.remote}'s line: ${open.map((c) => c.scope).join(", ")} changed on this machine ` +
          `and on the remote. Nothing was written. Choose a side: /state-flow-sync keep-local (this machine's ` +
          `values), /state-flow-sync take-remote (the remote's) or /state-flow-sync re-apply (this machine's ` +
          `changes on top of the remote's), optionally followed by the scope.`,
      );
    const chosen = (side: SideChoice) =>
      plan.conflicts.filter((c) => choices.get(c.scope) === side).map((c) => c.scope);
    const taken = new Set([...plan.fromRemote, ...chosen("remote")]);
    const extra = new Map<string, Buffer>();
    const reapplied: Record<string, Omit<Reapplied, "writes">> = {};
    const base = chosen("reapply").length > 0 ? await this.mergeBase(standing.local, standing.remoteHead) : null;
    for (const scope of chosen("reapply")) {
      const { writes, ...outcome } = await reapplyScope(this.source(), scope, { ...standing, base });
      for (const [path, bytes] of writes) extra.set(path, bytes);
      reapplied[scope] = outcome;
    }
    const paths = await this.changedPaths(standing.local, standing.remoteHead);
    const remoteScopes = paths.filter((path) => taken.has(scopeOfPath(path)));
    const from = [...taken].sort().join(", ") || "none";
    const again = Object.keys(reapplied).length > 0 ? `; re-applied on it: ${Object.keys(reapplied).join(", ")}` : "";
    const receipt = await this.bringIn(
      standing.local,
      remoteScopes,
      standing.remoteHead,
      {
        parents: [standing.local, standing.remoteHead],
        message: `state-flow: join ${standing.remote} (${standing.remoteHead.slice(0, 12)}); from it: ${from}${again}`,
      },
      extra,
    );
    return { ...receipt, reapplied };
  }

  /** The branch's commits and files, for reading a scope's transitions back (reapply.ts). */
  private source(): ReapplySource {
    return {
      commits: async (from, to, paths) => {
        const range = from === null ? [to] : [`${from}..${to}`];
        const out = await this.deps.runner.execText(["rev-list", "--reverse", ...range, "--", ...paths]);
        return out.split("\n").filter((line) => line !== "");
      },
      files: async (revision, paths) => (await this.deps.loadRevision({ revision }, paths)).files,
    };
  }

  /**
   * Publishes `paths` as `source` has them, and `extra`'s bytes, on top of `local` (basis: `local`'s bytes),
   * with the given parents.
   */
  private async bringIn(
    local: string,
    paths: readonly string[],
    source: string,
    commit: Pick<PublishRequest, "parents" | "reuse" | "message">,
    extra: ReadonlyMap<string, Buffer> = new Map(),
  ): Promise<PublishReceipt> {
    // A line that changed no file still needs a cohort to move the branch: the global meta.json, unchanged.
    const members = paths.length > 0 || extra.size > 0 ? [...new Set([...paths, ...extra.keys()])] : [META_FILE];
    const [before, after] = await Promise.all([
      this.deps.loadRevision({ revision: local }, members),
      this.deps.loadRevision({ revision: source }, members),
    ]);
    const writes = new Map<string, Buffer | null>();
    for (const path of members) {
      const bytes = extra.get(path) ?? after.files.get(path) ?? null;
      if (paths.length > 0 || extra.size > 0 || bytes !== null) writes.set(path, bytes);
    }
    return this.deps.publish({
      basis: { pointer: { revision: local }, hashes: before.hashes },
      writes,
      basisUnread: true,
      ...commit,
    });
  }

  /**
   * The state paths each side changed in a global or cwd scope since the base (none for a session or a file;
   * null when a side's pair cannot be read: the files are named instead).
   */
  private async stateChanges(
    scope: string,
    base: string | null,
    local: string,
    remoteHead: string,
  ): Promise<{ localChanges: string[]; remoteChanges: string[] } | null> {
    if (scope !== "global" && !scope.startsWith("cwd ")) return null;
    const name = scope === "global" ? "global" : "cwd";
    const dir = scope === "global" ? "" : `${scope.slice(4)}/`;
    const paths = [`${dir}${CHECKPOINT_FILE}`, `${dir}${PATCHES_FILE}`];
    const stateAt = async (revision: string | null) => {
      if (revision === null) return null;
      const files = (await this.deps.loadRevision({ revision }, paths)).files;
      const input = { checkpoint: files.get(paths[0]!) ?? null, patches: files.get(paths[1]!) ?? null };
      return streamState(parseScopeStream(name, input, dir === "" ? name : dir.slice(0, -1)));
    };
    const [before, mine, theirs] = await Promise.all([stateAt(base), stateAt(local), stateAt(remoteHead)]);
    return { localChanges: changedStatePaths(before, mine), remoteChanges: changedStatePaths(before, theirs) };
  }

  private async changedPaths(from: string, to: string): Promise<string[]> {
    const out = await this.deps.runner.execText(["diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to]);
    return out.split("\0").filter((path) => path !== "");
  }

  private async sameScope(local: string, remoteHead: string, paths: readonly string[]): Promise<boolean> {
    const [a, b] = await Promise.all([
      this.deps.loadRevision({ revision: local }, paths),
      this.deps.loadRevision({ revision: remoteHead }, paths),
    ]);
    return paths.every((path) => a.hashes.get(path) === b.hashes.get(path));
  }

  private async mergeBase(a: string, b: string): Promise<string | null> {
    try {
      return (await this.deps.runner.execText(["merge-base", a, b])).trim() || null;
    } catch (error) {
      if (error instanceof GitCommandError && error.exitCode === 1) return null;
      throw error;
    }
  }
}
