// In-store format migration (spec 001 "Existing stores and migration"): a scope directory that
// still holds a predecessor's current `state.json` — one scope's state document
// {artifacts, contract, working, response} — becomes that scope's initial checkpoint with an empty
// tail. No history is fabricated: the checkpoint is anchored at a fresh migration boundary (step
// 0), so every lineage reads it as its proven pre-origin base and the hot window grows from there.
//
// The plan is computed from one snapshot without writing anything; ambiguous inputs are refused
// before any write. Every converted scope and the removal of its state.json are one publication
// (one Git commit, one journaled file cohort). The result is then read back and verified; a
// verification that fails restores the exact old bytes by a compare-and-swap publication, and
// when someone changed the published files in between, their bytes are kept and the error says
// how to recover. A legacy journal or any other file beside state.json is neither read nor touched.

import { randomUUID } from "node:crypto";
import { lstatSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CHECKPOINT_FILE, PATCHES_FILE, parseScopeStream, serializeScopeStream } from "./core/codec.ts";
import { StateFlowError, errorMessage } from "./core/errors.ts";
import { hashJson, type JsonObject } from "./core/json.ts";
import { SCOPES, parseScopeState, type ScopeName, type ScopeState } from "./core/scope-state.ts";
import type { CohortSnapshot, StoreBackend } from "./backend.ts";
import { sameBytes } from "./cohort-basis.ts";
import { scopeFiles, type ScopeKeys } from "./layout.ts";
import { StoreError, errnoOf, isStoreError } from "./store-error.ts";

/** The one legacy snapshot file this migration accepts, per scope directory. */
export const LEGACY_STATE_FILE = "state.json";

interface ScopeLegacyFiles {
  readonly scope: ScopeName;
  readonly state: string;
  readonly checkpoint: string;
  readonly patches: string;
}

export interface LegacyScope {
  readonly scope: ScopeName;
  /** Store-relative path of the state.json being converted. */
  readonly path: string;
  /** Its exact bytes, restored if the migration fails. */
  readonly bytes: Buffer;
  readonly state: ScopeState;
  /** Semantic hash the converted checkpoint must reproduce. */
  readonly hash: string;
}

export interface LegacyMigrationPlan {
  readonly scopes: readonly LegacyScope[];
  /** Every file the plan read (its compare-and-swap basis). */
  readonly paths: readonly string[];
  readonly writes: ReadonlyMap<string, Buffer | null>;
}

export interface LegacyMigrationResult {
  readonly scopes: readonly ScopeName[];
  readonly revision: string;
}

function filesOf(keys: ScopeKeys): ScopeLegacyFiles[] {
  return SCOPES.map((scope) => {
    const files = scopeFiles(scope, keys);
    const state = files.dir === "" ? LEGACY_STATE_FILE : `${files.dir}/${LEGACY_STATE_FILE}`;
    return { scope, state, checkpoint: files.checkpoint, patches: files.patches };
  });
}

/** The store-relative files a migration plan reads for this session's three scopes. */
export function legacyPaths(keys: ScopeKeys): string[] {
  return filesOf(keys).flatMap((f) => [f.state, f.checkpoint, f.patches]);
}

function bytesOf(snapshot: CohortSnapshot, path: string): Buffer | null {
  return snapshot.files.get(path) ?? null;
}

/** One scope's state document from a state.json's bytes; anything else is the named `invalid-legacy-state`. */
export function parseLegacyState(path: string, bytes: Buffer): ScopeState {
  const fail = (detail: string, cause?: unknown): never => {
    throw new StoreError(
      "invalid-legacy-state",
      `${path} ${detail}. State Flow converts only a state.json holding one scope's state document ` +
        '{"artifacts":{…},"contract":{…},"working":{…},"response":"…"}. Fix the file (or move it out of the store ' +
        "if it is not State Flow's), then start State Flow again; nothing was written.",
      { file: path, cause },
    );
  };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    return fail("is not valid UTF-8", error);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return fail(`is not valid JSON (${errorMessage(error)})`, error);
  }
  try {
    return parseScopeState(document, LEGACY_STATE_FILE);
  } catch (error) {
    if (!(error instanceof StateFlowError)) throw error;
    return fail(`is not a scope state: ${error.path ? `${error.path}: ` : ""}${error.message}`, error);
  }
}

/**
 * What migrating this session's scopes would write, from one snapshot and without writing: null
 * when no scope holds a state.json. Refuses a state.json beside a checkpoint (two snapshots, no
 * way to tell which is current) and one beside a tail without a checkpoint (records with no base).
 */
export function planLegacyMigration(snapshot: CohortSnapshot, keys: ScopeKeys): LegacyMigrationPlan | null {
  const scopes: LegacyScope[] = [];
  const writes = new Map<string, Buffer | null>();
  for (const files of filesOf(keys)) {
    const bytes = bytesOf(snapshot, files.state);
    if (bytes === null) continue;
    if (bytesOf(snapshot, files.checkpoint) !== null) {
      throw new StoreError(
        "ambiguous-snapshot",
        `The ${files.scope} scope holds both a legacy ${files.state} and a current ${files.checkpoint}: two ` +
          "snapshots, and nothing proves which one is current. Nothing was migrated. Compare them, keep the " +
          `current one and move the other out of the store (e.g. mv ${files.state} ${files.state}.old), then ` +
          "start State Flow again.",
        { file: files.state },
      );
    }
    if (bytesOf(snapshot, files.patches) !== null) {
      throw new StoreError(
        "orphaned-tail",
        `The ${files.scope} scope holds a legacy ${files.state} beside ${files.patches} with no ${CHECKPOINT_FILE}: ` +
          "those records have no base they provably follow. Nothing was migrated. Restore the checkpoint they " +
          `belong to (e.g. from Git), or move ${files.patches} out of the store if state.json is current, then ` +
          "start State Flow again.",
        { file: files.patches },
      );
    }
    const state = parseLegacyState(files.state, bytes);
    const hash = hashJson(state as unknown as JsonObject);
    const origin = `m-${randomUUID()}`;
    const stream = serializeScopeStream({
      scope: files.scope,
      checkpoint: { through: { lineage: origin, id: origin, step: 0 }, state, hash },
      tail: [],
    });
    writes.set(files.checkpoint, Buffer.from(stream.checkpoint, "utf8"));
    writes.set(files.patches, Buffer.from(stream.patches, "utf8"));
    writes.set(files.state, null);
    scopes.push({ scope: files.scope, path: files.state, bytes, state, hash });
  }
  return scopes.length === 0 ? null : { scopes, paths: legacyPaths(keys), writes };
}

/** Throws unless the snapshot holds exactly the converted scopes (state.json gone, checkpoint reproducing it). */
export function verifyLegacyMigration(plan: LegacyMigrationPlan, snapshot: CohortSnapshot, keys: ScopeKeys): void {
  const files = new Map(filesOf(keys).map((f) => [f.scope, f]));
  for (const scope of plan.scopes) {
    const f = files.get(scope.scope)!;
    const problem = (detail: string): never => {
      throw new StoreError("migration-failed", `${f.checkpoint} ${detail} after the migration`, { file: f.checkpoint });
    };
    if (bytesOf(snapshot, f.state) !== null) problem(`is not alone: ${f.state} still exists`);
    const checkpoint = bytesOf(snapshot, f.checkpoint);
    const patches = bytesOf(snapshot, f.patches);
    if (checkpoint === null || patches === null) problem("or its tail is missing");
    if (!checkpoint!.equals(plan.writes.get(f.checkpoint)!) || patches!.length !== 0)
      problem("differs from what was written");
    const stream = parseScopeStream(scope.scope, { checkpoint, patches }, f.checkpoint.replace(/\/?[^/]*$/, "") || ".");
    if (stream.checkpoint.hash !== scope.hash) problem(`does not reproduce the semantic state of ${scope.path}`);
  }
}

export interface MigrateOptions {
  readonly message?: string;
  /** Runs after the publication, before verification (a test's way to make the migration fail there). */
  readonly afterPublish?: () => Promise<void>;
}

/**
 * When the old bytes cannot go back into place, they are kept beside it under a name no store
 * reads (`state.json.pre-migration`, numbered if taken) so nothing accepted is lost.
 */
async function keepOldBytes(root: string, plan: LegacyMigrationPlan): Promise<string> {
  const kept: string[] = [];
  for (const scope of plan.scopes) {
    for (let n = 0; ; n++) {
      const path = `${scope.path}.pre-migration${n === 0 ? "" : `.${n}`}`;
      try {
        await writeFile(join(root, path), scope.bytes, { flag: "wx" });
        kept.push(path);
        break;
      } catch (error) {
        if (errnoOf(error) !== "EEXIST") throw error;
      }
    }
  }
  return kept.join(", ");
}

/**
 * Whether any of this session's scope directories has an entry named state.json: three lstat calls,
 * no read, no git process. Anything there but "no such entry" counts (a symlink, an unreadable
 * directory): the planner then reads it and refuses it by name.
 */
export function holdsLegacyState(root: string, keys: ScopeKeys): boolean {
  return filesOf(keys).some(({ state }) => {
    try {
      return lstatSync(join(root, state), { throwIfNoEntry: false }) !== undefined;
    } catch (error) {
      return errnoOf(error) !== "ENOTDIR";
    }
  });
}

/**
 * Plans, publishes and verifies the migration of this session's legacy state.json files; null when
 * there is none. On a failure after publication the old bytes are restored exactly, unless the
 * published files changed meanwhile: then nothing is overwritten and `migration-failed` names them.
 */
export async function migrateLegacyState(
  store: StoreBackend,
  keys: ScopeKeys,
  options: MigrateOptions = {},
): Promise<LegacyMigrationResult | null> {
  // A canonical store (no state.json beside this session's scopes) skips planning altogether (spec
  // 001: every start would otherwise read the cohort once more, under the store's lock rules, for
  // nothing). A state.json that only Git's HEAD still holds is the user's deletion, which the next
  // commit's complete worktree delta records.
  if (!holdsLegacyState(store.root, keys)) return null;
  const snapshot = await store.loadCurrent(legacyPaths(keys)).catch((error: unknown) => {
    throw untrackedLegacyState(store, error);
  });
  let plan: LegacyMigrationPlan | null;
  try {
    plan = planLegacyMigration(snapshot, keys);
  } catch (error) {
    if (!RESOLVED_BY_EDITING.some((code) => isStoreError(error, code))) throw error;
    throw withGitAdvice(store, error as StoreError);
  }
  if (plan === null) return null;
  const names = plan.scopes.map((s) => s.scope);
  const receipt = await store.publish({
    basis: snapshot,
    writes: plan.writes,
    message: options.message ?? `state-flow: migrate ${names.join(", ")} state.json to checkpoints`,
  });
  try {
    await options.afterPublish?.();
    verifyLegacyMigration(plan, await store.loadCurrent(plan.paths), keys);
  } catch (error) {
    await restoreLegacy(store, plan, receipt.pointer.revision, error);
  }
  return { scopes: names, revision: receipt.pointer.revision };
}

/** Planning refusals the user resolves by changing the store's files. */
const RESOLVED_BY_EDITING = ["ambiguous-snapshot", "orphaned-tail", "invalid-legacy-state"] as const;

/**
 * A refusal the user resolves by editing, moving or fixing store files: in a Git store the files
 * are read only as the branch holds them (anything else is a divergence), so the change has to be
 * committed too. The advice says how.
 */
function withGitAdvice(store: StoreBackend, refusal: StoreError): StoreError {
  if (store.kind !== "git") return refusal;
  const dir = refusal.file?.includes("/") ? refusal.file.replace(/\/[^/]*$/, "") : ".";
  const git = `git -C ${store.root}`;
  return new StoreError(
    refusal.code,
    `${refusal.message} This store is a Git repository, whose files State Flow reads only as its branch holds ` +
      `them: commit the change before starting again (${git} add -A -- ${dir} && ${git} commit -m ` +
      `"prepare the state.json migration").`,
    { ...(refusal.file ? { file: refusal.file } : {}), cause: refusal },
  );
}

/**
 * A Git store whose history lacks a live state.json reads it as diverged, and the generic advice
 * (remove the file) would delete the very state to migrate: it gets its own advice.
 */
function untrackedLegacyState(store: StoreBackend, error: unknown): unknown {
  if (!isStoreError(error, "worktree-diverged") || !error.file?.endsWith(LEGACY_STATE_FILE)) return error;
  const git = `git -C ${store.root}`;
  return new StoreError(
    "worktree-diverged",
    `${error.file} is a legacy state.json that the store's Git history does not contain (or holds other bytes ` +
      `of). Do not remove it: it is the state to migrate. Commit it as it is (${git} add -- ${error.file} && ` +
      `${git} commit -m "predecessor state"), then start State Flow again; nothing was written.`,
    { file: error.file, cause: error },
  );
}

/** Puts every state.json back and removes the converted pair, only if the published bytes are still there. */
async function restoreLegacy(
  store: StoreBackend,
  plan: LegacyMigrationPlan,
  revision: string,
  cause: unknown,
): Promise<never> {
  const what = `The migration of ${plan.scopes.map((s) => s.path).join(", ")} failed (${errorMessage(cause)})`;
  let live: CohortSnapshot;
  try {
    live = await store.loadCurrent(plan.paths);
  } catch (error) {
    const kept = await keepOldBytes(store.root, plan);
    throw withGitAdvice(
      store,
      new StoreError(
        "migration-failed",
        `${what}, and the store could not be read back (${errorMessage(error)}), so nothing was restored over it ` +
          `(revision ${revision} is as published). The old bytes are kept in ${kept}; resolve the read error, keep ` +
          "the current state in one format, then start State Flow again.",
        { file: plan.scopes[0]!.path, cause: error },
      ),
    );
  }
  const changed = [...plan.writes].filter(([path, bytes]) => !sameBytes(bytesOf(live, path), bytes)).map(([p]) => p);
  if (changed.length > 0) {
    const kept = await keepOldBytes(store.root, plan);
    throw withGitAdvice(
      store,
      new StoreError(
        "migration-failed",
        `${what}, and ${changed.join(", ")} changed since it was published, so nothing was restored over them. ` +
          `The old bytes are kept in ${kept}; compare them with the current files, keep the current state in one ` +
          "format, then start State Flow again.",
        { file: changed[0], cause },
      ),
    );
  }
  const writes = new Map<string, Buffer | null>();
  for (const scope of plan.scopes) {
    writes.set(scope.path, scope.bytes);
    const dir = scope.path.slice(0, -LEGACY_STATE_FILE.length);
    writes.set(`${dir}${CHECKPOINT_FILE}`, null);
    writes.set(`${dir}${PATCHES_FILE}`, null);
  }
  try {
    await store.publish({ basis: live, writes, message: "state-flow: restore state.json after a failed migration" });
  } catch (error) {
    throw new StoreError(
      "migration-failed",
      `${what}, and restoring the old bytes failed too (${errorMessage(error)}). The store holds the migration as ` +
        `published (${revision}); inspect ${[...plan.writes.keys()].join(", ")} before starting State Flow again.`,
      { file: plan.scopes[0]!.path, cause: error },
    );
  }
  throw new StoreError(
    "migration-failed",
    `${what}. The old state.json bytes were restored exactly and nothing else changed; fix the cause and start ` +
      "State Flow again.",
    { file: plan.scopes[0]!.path, cause },
  );
}
