// Store layout (spec 001 "Temporal storage"):
//
//   <root>/                       default <agentDir>/state-flow/
//     checkpoint.json patches.jsonl meta.json                    global scope
//     <cwd-key>/checkpoint.json patches.jsonl meta.json          cwd scope
//     <cwd-key>/<session-key>/checkpoint.json patches.jsonl config.json meta.json   session scope
//
// Keys mirror Pi's native session layout: the cwd key is Pi's session-folder name for the cwd
// (getDefaultSessionDirPath in @earendil-works/pi-coding-agent core/session-manager.js:
// `--${resolved.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`), and the session key is the
// session file stem `<timestamp>_<uuid>` where the timestamp is the header's ISO timestamp with
// ':' and '.' turned into '-'. Keys are names, not identities: the canonical cwd / session UUID
// is recorded inside the owner's meta.json and a foreign owner of a key is rejected.

import { basename, join, resolve } from "node:path";
import { CHECKPOINT_FILE, CONFIG_FILE, META_FILE, PATCHES_FILE } from "./core/codec.ts";
import { SCOPES, type ScopeName } from "./core/scope-state.ts";
import { StoreError } from "./store-error.ts";

const STORE_DIR_NAME = "state-flow";

/** Default store root: `<agentDir>/state-flow` (agentDir follows PI_CODING_AGENT_DIR in Pi). */
export function defaultStoreRoot(agentDir: string): string {
  return join(resolve(agentDir), STORE_DIR_NAME);
}

/**
 * Pi's session-folder name for a cwd: `/home/a/b` → `--home-a-b--`. Relative cwds resolve against process.cwd() as Pi
 * does.
 */
export function cwdKey(cwd: string): string {
  const resolved = resolve(cwd);
  return `--${resolved.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/** Pi's file-name timestamp: the header's ISO timestamp with ':' and '.' replaced by '-'. */
function sessionFileTimestamp(isoTimestamp: string): string {
  return isoTimestamp.replace(/[:.]/g, "-");
}

function assertKey(kind: "cwd" | "session", key: string): string {
  if (key.length === 0 || key === "." || key === ".." || key.toLowerCase() === ".git" || /[/\\\0]/.test(key)) {
    throw new StoreError(
      "invalid-key",
      `${JSON.stringify(key)} is not a valid ${kind} key: keys are single path components without "/", "\\" or NUL. ` +
        `Derive keys with cwdKey()/sessionKeyFromFile()/sessionKeyFromHeader().`,
      { file: key },
    );
  }
  return key;
}

/** Session key from a Pi session file path: the file stem (`<timestamp>_<uuid>`). */
export function sessionKeyFromFile(sessionFile: string): string {
  const name = basename(sessionFile);
  const stem = name.endsWith(".jsonl") ? name.slice(0, -".jsonl".length) : name;
  return assertKey("session", stem);
}

/** Session key of an in-memory session from Pi's header `{type:"session", id, timestamp}`. */
export function sessionKeyFromHeader(header: { readonly id: string; readonly timestamp: string }): string {
  if (!header.id || !header.timestamp) {
    throw new StoreError("invalid-key", "A session header needs both `id` and `timestamp` to derive its session key.");
  }
  return assertKey("session", `${sessionFileTimestamp(header.timestamp)}_${header.id}`);
}

/** The session UUID a session key names (the part after the first "_"). */
export function sessionIdOfKey(sessionKey: string): string {
  const index = sessionKey.indexOf("_");
  return index < 0 ? sessionKey : sessionKey.slice(index + 1);
}

export interface ScopeKeys {
  readonly cwdKey: string;
  readonly sessionKey: string;
}

export interface ScopeFiles {
  readonly scope: ScopeName;
  /** Store-relative directory ("" for global). */
  readonly dir: string;
  readonly checkpoint: string;
  readonly patches: string;
  readonly meta: string;
  /** Session scope only. */
  readonly config?: string;
}

function rel(dir: string, file: string): string {
  return dir === "" ? file : `${dir}/${file}`;
}

function scopeDir(scope: ScopeName, keys: ScopeKeys): string {
  switch (scope) {
    case "global":
      return "";
    case "cwd":
      return assertKey("cwd", keys.cwdKey);
    case "session":
      return `${assertKey("cwd", keys.cwdKey)}/${assertKey("session", keys.sessionKey)}`;
  }
}

/** Store-relative paths (POSIX separators) of one scope's files. */
export function scopeFiles(scope: ScopeName, keys: ScopeKeys): ScopeFiles {
  const dir = scopeDir(scope, keys);
  const base = {
    scope,
    dir,
    checkpoint: rel(dir, CHECKPOINT_FILE),
    patches: rel(dir, PATCHES_FILE),
    meta: rel(dir, META_FILE),
  };
  return scope === "session" ? { ...base, config: rel(dir, CONFIG_FILE) } : base;
}

/** Every file of a session's complete cohort (global + cwd + session), sorted. */
export function cohortPaths(keys: ScopeKeys): string[] {
  const paths: string[] = [];
  for (const scope of SCOPES) {
    const files = scopeFiles(scope, keys);
    paths.push(files.checkpoint, files.patches, files.meta);
    if (files.config) paths.push(files.config);
  }
  return paths.sort(comparePaths);
}

/** Byte-order comparison of store paths (the order used by listings and Git). */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

const SCOPE_FILE_NAMES = new Set([CHECKPOINT_FILE, PATCHES_FILE, META_FILE]);

/** Whether `path` is where the store layout keeps a scope file (global, cwd or session). */
export function isScopeFilePath(path: string): boolean {
  const parts = path.split("/");
  const name = parts[parts.length - 1]!;
  if (parts.length === 1) return SCOPE_FILE_NAMES.has(name);
  if (parts.length > 3 || !/^--.*--$/.test(parts[0]!)) return false;
  return SCOPE_FILE_NAMES.has(name) || (parts.length === 3 && name === CONFIG_FILE);
}

/** Which scope a store path belongs to, for error messages ("global", "cwd", "session", or undefined). */
export function scopeOfPath(path: string): ScopeName | undefined {
  const depth = path.split("/").length;
  return depth === 1 ? "global" : depth === 2 ? "cwd" : depth === 3 ? "session" : undefined;
}

// ---------------------------------------------------------------------------------------------
// Identity ownership: keys are names; the authoritative identity is recorded in the owner's meta.json.

export type ScopeIdentity =
  | { readonly kind: "cwd"; readonly cwd: string }
  | { readonly kind: "session"; readonly sessionId: string; readonly cwd: string };

/** Identity record of a cwd scope (canonical absolute cwd). */
export function cwdIdentity(cwd: string): ScopeIdentity {
  return { kind: "cwd", cwd: resolve(cwd) };
}

/** Identity record of a session scope (authoritative session UUID + canonical cwd). */
export function sessionIdentity(sessionId: string, cwd: string): ScopeIdentity {
  return { kind: "session", sessionId, cwd: resolve(cwd) };
}

function describeIdentity(identity: ScopeIdentity): string {
  return identity.kind === "cwd" ? `cwd ${identity.cwd}` : `session ${identity.sessionId} (cwd ${identity.cwd})`;
}

function sameIdentity(a: ScopeIdentity, b: ScopeIdentity): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "cwd" && b.kind === "cwd") return a.cwd === b.cwd;
  if (a.kind === "session" && b.kind === "session") return a.sessionId === b.sessionId && a.cwd === b.cwd;
  return false;
}

/**
 * Rejects a key owned by a foreign identity. `stored` is the identity the caller read from the
 * key's meta.json (undefined when the key is new: then `claimed` may take it).
 */
export function assertIdentityOwns(options: {
  readonly file: string;
  readonly stored: ScopeIdentity | undefined;
  readonly claimed: ScopeIdentity;
}): void {
  const { file, stored, claimed } = options;
  if (stored === undefined || sameIdentity(stored, claimed)) return;
  throw new StoreError(
    "foreign-identity",
    `${file} is owned by ${describeIdentity(stored)}, not ${describeIdentity(claimed)}. ` +
      `Two ${claimed.kind === "cwd" ? "directories map to the same cwd key" : "sessions claim the same session key"}` +
      `; State Flow never shares or silently re-targets a scope. ` +
      `Use a different state store (storage root) for one of them, ` +
      `or move the foreign scope directory away after checking it.`,
    { file },
  );
}
