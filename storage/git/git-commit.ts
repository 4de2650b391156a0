// The commit of a publication: the exact prepared blobs overlaid on the staged isolated index, the
// trees, the commit object and the compare-and-swap of the branch ref. In-process where that is
// byte-identical to git (git-index.ts, git-tree.ts, git-objects.ts, git-refs.ts: no process on the
// hot path), else by git's own commands. Kept apart from the publication protocol around it, which
// decides what is staged and what a failure undoes; this module only turns a staged index into a
// commit the branch names, and remembers that commit's trees for the next one.

import { lstatSync, readFileSync, writeFileSync, type BigIntStats } from "node:fs";
import { join } from "node:path";
import { killPoint } from "../fs/crash-points.ts";
import { StoreError, errnoOf } from "../store-error.ts";
import { backdateIndex, isExecutable, type GitRepo } from "./git-repo.ts";
import { GitCommandError, gitFailed } from "./git-runner.ts";
import { identityMissing, looksLikeIdentityError, type CommitSettings } from "./git-settings.ts";
import { restageEntries } from "./index-merge.ts";
import { indexPathOf, overlayEntries, parseIndex, serializeIndex } from "./plumbing/git-index.ts";
import {
  commitObjectBody,
  gitDateOf,
  isPlainCommitMessage,
  writeSmallLooseObjectSync,
  zeroObjectId,
} from "./plumbing/git-objects.ts";
import { isPlainBranchRef, prepareRefUpdate } from "./plumbing/git-refs.ts";
import { TreeConflictError, buildTrees, cacheTreeIds } from "./plumbing/git-tree.ts";

const REFLOG_MESSAGE = "state-flow: accepted cohort";
/** Index size up to which a publication without known trees still builds them in-process. */
export const COLD_IN_PROCESS_ENTRIES = 256;

export interface CommitStagedOptions {
  readonly ref: string;
  readonly base: string | null;
  readonly env: Record<string, string>;
  readonly blobs: ReadonlyMap<string, string | null>;
  /** Store files `git add` restaged, with the blob of their exact bytes (their stat data is kept). */
  readonly restaged: ReadonlyMap<string, string | null>;
  readonly message: string;
  /** Runs once the commit id is known, before git's ref locks are taken (the journal is written there). */
  readonly beforeRefUpdate?: (revision: string) => Promise<void>;
  /**
   * The new commit's parents (default: `base`). The ref still moves by compare-and-swap against `base`: a
   * fast-forward commits on top of the fetched commit, a two-parent commit joins the remote's line.
   */
  readonly parents?: readonly string[];
  /** An existing commit the ref moves to instead when the built tree is its tree (a fast-forward adds nothing). */
  readonly reuse?: { readonly revision: string; readonly tree: string };
}

function parentsOf(options: CommitStagedOptions): readonly string[] {
  return options.parents ?? (options.base ? [options.base] : []);
}

export class GitCommitter {
  private readonly repo: GitRepo;
  /** The tree ids of the last commit this backend published (they exist while it is reachable). */
  private knownTrees: { readonly revision: string; readonly ids: ReadonlySet<string> } | undefined;

  constructor(repo: GitRepo) {
    this.repo = repo;
  }

  /**
   * Overlays the exact prepared blobs on the staged isolated index and publishes one commit:
   * the overlay and tree (in-process, else `update-index --index-info` + `write-tree`), the
   * commit object (in-process, else `commit-tree -p <base>`; identity from git config only),
   * then — after `beforeRefUpdate` — a compare-and-swap of the ref against the reconciled base
   * (in-process through git's lockfile protocol, else `update-ref <ref> <new> <base>`). No
   * process on the hot path; two for each part that needs git's own.
   */
  async commitStaged(options: CommitStagedOptions): Promise<string> {
    const { ref, base, env, blobs, restaged, message } = options;
    const zero = zeroObjectId(this.repo.info.objectFormat);
    const settings = await this.repo.commitSettings();
    const inProcessOverlay = settings.sharedRepository
      ? null
      : this.overlayInProcess(env.GIT_INDEX_FILE!, base, blobs, restaged, settings.fsyncObjects);
    const built = inProcessOverlay ?? (await this.overlayByGit(env, blobs, restaged, zero));
    const inProcessCommit =
      settings.processPathReason === null &&
      isPlainBranchRef(ref) &&
      isPlainCommitMessage(message) &&
      !(await isExecutable(settings.referenceTransactionHook));
    const revision = inProcessCommit
      ? await this.commitInProcess(options, built.tree, settings, zero)
      : await this.commitByGit(options, built.tree, zero);
    // What the next publication may trust: the trees of the commit this one made.
    this.knownTrees = built.treeIds ? { revision, ids: built.treeIds } : undefined;
    return revision;
  }

  /** The commit object written in-process and the ref moved by git's lockfile protocol: exact, two processes fewer. */
  private async commitInProcess(
    options: CommitStagedOptions,
    tree: string,
    settings: CommitSettings,
    zero: string,
  ): Promise<string> {
    const { ref, base, message } = options;
    const date = gitDateOf(Date.now());
    const committer = `${settings.committer} ${settings.committerDate ?? date}`;
    const author = `${settings.author} ${settings.authorDate ?? date}`;
    let revision: string;
    if (options.reuse?.tree === tree) revision = options.reuse.revision;
    else {
      const body = commitObjectBody({ tree, parents: parentsOf(options), author, committer, message });
      try {
        const objectsDir = join(this.repo.info.commonDir, "objects");
        revision = writeSmallLooseObjectSync(objectsDir, "commit", body, { fsync: settings.fsyncObjects });
      } catch (error) {
        throw gitFailed("Writing the commit object", error);
      }
    }
    killPoint("commit.written");
    await options.beforeRefUpdate?.(revision);
    const refUpdate = await prepareRefUpdate({
      gitDir: this.repo.info.gitDir,
      commonDir: this.repo.info.commonDir,
      ref,
      newId: revision,
      oldId: base,
      zeroId: zero,
      committer,
      message: REFLOG_MESSAGE,
      logAllRefUpdates: settings.logAllRefUpdates,
      headPointsHere: true, // `ref` was read from HEAD; re-checked under HEAD.lock
      lockTimeoutMs: settings.lockTimeoutMs,
    });
    await refUpdate.commit();
    return revision;
  }

  /** `git commit-tree` and `git update-ref`, where the in-process path would not be exact. */
  private async commitByGit(options: CommitStagedOptions, tree: string, zero: string): Promise<string> {
    const { ref, base, message } = options;
    let revision: string;
    if (options.reuse?.tree === tree) revision = options.reuse.revision;
    else
      try {
        const parents = parentsOf(options).flatMap((parent) => ["-p", parent]);
        const args = ["-c", "user.useConfigOnly=true", "commit-tree", tree, ...parents, "-m", message];
        revision = (await this.repo.runner.execText(args)).trim();
      } catch (error) {
        if (looksLikeIdentityError(error)) throw identityMissing(error, this.repo.root);
        throw gitFailed("Creating the commit (git commit-tree)", error);
      }
    killPoint("commit.written");
    await options.beforeRefUpdate?.(revision);
    try {
      await this.repo.runner.exec(["update-ref", "-m", REFLOG_MESSAGE, ref, revision, base ?? zero]);
    } catch (error) {
      const casFailed = /but expected|reference already exists|cannot lock ref/i;
      if (error instanceof GitCommandError && casFailed.test(error.stderr)) {
        throw new StoreError(
          "stale-basis",
          `Stale basis: ${ref} of the state repository moved away from ${base ?? "(unborn)"} while publishing ` +
            `(compare-and-swap failed). Nothing was published; reload the current view and retry. ` +
            `Git said: ${error.message}`,
          { file: ref, cause: error },
        );
      }
      throw gitFailed(`Moving ${ref} to the new commit (git update-ref)`, error, ref);
    }
    return revision;
  }

  /**
   * The overlay and the tree without git processes (see git-index.ts, git-tree.ts): parses the
   * staged isolated index, overlays the prepared blobs exactly as `update-index --index-info`
   * would (the restaged store files keep the stat data `git add` just recorded), writes the tree
   * objects that do not exist yet and rewrites the isolated index. null =
   * something git-index.ts does not handle (the caller runs git's processes instead; nothing was
   * changed). The rewritten index keeps the mtime of the one `git add -A` wrote (minus 1 µs): git
   * judges "racily clean" entries against the index file's mtime, and the stat data inside is
   * from that moment, so a later mtime could make an edit in between look clean.
   */
  private overlayInProcess(
    indexPath: string,
    base: string | null,
    blobs: ReadonlyMap<string, string | null>,
    restaged: ReadonlyMap<string, string | null>,
    fsync: boolean,
  ): { tree: string; treeIds: Set<string> | null } | null {
    if (this.repo.info.objectFormat !== "sha1") return null;
    // Synchronous I/O on purpose: the live files' fsyncs occupy libuv's thread pool meanwhile, and
    // the index (just written by git, in the page cache) would queue behind them for milliseconds.
    // `git add -A` with nothing to stage on an unborn branch leaves no index file: an empty index.
    let staged: [Buffer, BigIntStats] | null;
    try {
      staged = [readFileSync(indexPath), lstatSync(indexPath, { bigint: true })];
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw gitFailed("Reading the staged index", error);
      staged = null;
    }
    const parsed =
      staged === null
        ? ({ supported: true, version: 2, entries: [], cacheTree: null } as const)
        : parseIndex(staged[0]);
    if (!parsed.supported) return null;
    // Trees of the last commit this backend published are reachable from it, hence present: the
    // cache tree's entries for them are reused (elsewhere the trees are rebuilt and written).
    const known = this.knownTrees?.revision === base ? this.knownTrees.ids : new Set<string>();
    // Without that knowledge every tree would be rebuilt and, when git has packed them, written
    // again as loose objects (seconds for a store with thousands of sessions): git's write-tree
    // checks its packs instead, and teaches this backend the tree ids for the next publication.
    if (base !== null && known.size === 0 && parsed.entries.length > COLD_IN_PROCESS_ENTRIES) return null;
    const { kept, added } = restageEntries(parsed.entries, restaged);
    const entries = overlayEntries(kept, new Map([...added, ...blobs]));
    let build;
    try {
      build = buildTrees(entries, {
        cached: parsed.cacheTree,
        changed: [...restaged.keys(), ...blobs.keys()].map(indexPathOf),
        exists: (oid) => known.has(oid),
      });
    } catch (error) {
      if (error instanceof TreeConflictError) return null; // git's own rules decide
      throw error;
    }
    const objectsDir = join(this.repo.info.commonDir, "objects");
    try {
      for (const tree of build.computed)
        if (!known.has(tree.id)) writeSmallLooseObjectSync(objectsDir, "tree", tree.body, { fsync });
    } catch (error) {
      throw gitFailed("Writing the tree objects", error);
    }
    killPoint("trees.written");
    try {
      writeFileSync(indexPath, serializeIndex(entries, parsed.version, build.cacheTree));
      if (staged !== null) backdateIndex(indexPath, staged[1]);
    } catch (error) {
      throw gitFailed("Writing the staged index", error);
    }
    killPoint("index.overlaid");
    return { tree: build.root, treeIds: cacheTreeIds(build.cacheTree) };
  }

  /**
   * The overlay and the tree through git: `update-index -z --index-info` (deletions with mode 0)
   * and `write-tree`, which also records the complete cache tree in the isolated index; its tree
   * ids are learned (when git-index.ts reads that index) so the next publication can run in-process.
   */
  private async overlayByGit(
    env: Record<string, string>,
    blobs: ReadonlyMap<string, string | null>,
    restaged: ReadonlyMap<string, string | null>,
    zero: string,
  ): Promise<{ tree: string; treeIds: Set<string> | null }> {
    let info = "";
    for (const [path, id] of [...restaged, ...blobs])
      info += id === null ? `0 ${zero}\t${path}\0` : `100644 ${id}\t${path}\0`;
    if (info) await this.repo.git(["update-index", "-z", "--index-info"], "Overlaying the prepared files", env, info);
    const tree = (await this.repo.git(["write-tree"], "Writing the tree", env)).trim();
    let treeIds: Set<string> | null = null;
    if (this.repo.info.objectFormat === "sha1" && env.GIT_INDEX_FILE) {
      const parsed = parseIndex(readFileSync(env.GIT_INDEX_FILE));
      if (parsed.supported && parsed.cacheTree?.oid === tree) treeIds = cacheTreeIds(parsed.cacheTree);
    }
    return { tree, treeIds };
  }
}
