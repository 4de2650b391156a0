// What an in-process commit and ref update need to know from git, read once per backend generation.
//
// The identity comes from git's own `git var GIT_*_IDENT` (git applies GIT_AUTHOR_* and
// GIT_COMMITTER_* there, dates included; nothing is invented) and the configuration from
// `git config -z -l`. Where writing the commit or moving the ref in-process would not be exactly
// what git writes (sha256, signing, another commit encoding, shared repositories, another ref
// storage, a timezone node and git disagree on), `processPathReason` names why git must do it.

import { isAbsolute, join } from "node:path";
import { gitDateOf, parseGitIdent } from "./plumbing/git-objects.ts";
import type { LogAllRefUpdates } from "./plumbing/git-refs.ts";
import { GitCommandError, gitFailed, type GitRunner } from "./git-runner.ts";
import { StoreError } from "../store-error.ts";

/** The repository facts the settings depend on. */
export interface SettingsRepo {
  readonly root: string;
  readonly commonDir: string;
  readonly objectFormat: "sha1" | "sha256";
}

export interface CommitSettings {
  /** Why the commit and ref update must run as git processes; null = in-process is exact. */
  readonly processPathReason: string | null;
  /** `Name <email>` from git var. */
  readonly author: string;
  readonly committer: string;
  /** `<seconds> <tz>` when GIT_*_DATE fixes the date (as git parsed it); null = now. */
  readonly authorDate: string | null;
  readonly committerDate: string | null;
  readonly fsyncObjects: boolean;
  /** core.sharedRepository asks for group permissions on objects, which only git's own writers apply. */
  readonly sharedRepository: boolean;
  readonly logAllRefUpdates: LogAllRefUpdates;
  readonly lockTimeoutMs: number;
  readonly referenceTransactionHook: string;
}

/**
 * Reads the identity (`git -c user.useConfigOnly=true var`, so an auto-detected identity is refused
 * with `git-identity-missing`) and the configuration: three processes, concurrently.
 */
export async function readCommitSettings(runner: GitRunner, repo: SettingsRepo): Promise<CommitSettings> {
  const ident = async (variable: string) => {
    try {
      return await runner.run(["-c", "user.useConfigOnly=true", "var", variable]);
    } catch (error) {
      if (looksLikeIdentityError(error)) throw identityMissing(error, repo.root);
      throw gitFailed(`Checking the Git identity (${variable})`, error);
    }
  };
  const [authorOut, committerOut, configOut] = await Promise.all([
    ident("GIT_AUTHOR_IDENT"),
    ident("GIT_COMMITTER_IDENT"),
    runner.run(["config", "-z", "-l"]).catch((error: unknown) => {
      throw gitFailed("Reading the Git configuration (git config -l)", error);
    }),
  ]);
  const config = parseConfigList(configOut);
  const author = parseGitIdent(authorOut);
  const committer = parseGitIdent(committerOut);
  const fixedAuthorDate = (runner.envValue("GIT_AUTHOR_DATE") ?? "") !== "";
  const fixedCommitterDate = (runner.envValue("GIT_COMMITTER_DATE") ?? "") !== "";
  // git prints the ident's date in its own timezone: a non-fixed date must agree with ours.
  const sameZone = (parsed: { date: string; seconds: number } | null, fixed: boolean) =>
    parsed !== null && (fixed || gitDateOf(parsed.seconds * 1000) === parsed.date);
  const encoding = config.get("i18n.commitencoding");
  const shared = config.get("core.sharedrepository");
  const fsync = config.get("core.fsync") ?? "";
  const logAll = config.get("core.logallrefupdates");
  const hooksPath = config.get("core.hookspath");
  let inProcess: string | null = null; // why the process path is needed, or null
  if (repo.objectFormat !== "sha1") inProcess = "sha256 object format";
  else if (gitBool(config.get("commit.gpgsign"))) inProcess = "commit.gpgSign";
  else if (encoding != null && !/^utf-?8$/i.test(encoding)) inProcess = "i18n.commitEncoding";
  else if (shared != null && !/^(false|no|off|0|umask)$/i.test(shared)) inProcess = "core.sharedRepository";
  else if (config.has("extensions.refstorage")) inProcess = "extensions.refStorage";
  else if (!sameZone(author, fixedAuthorDate) || !sameZone(committer, fixedCommitterDate))
    inProcess = "timezone or identity format";
  const timeout = Number(config.get("core.filesreflocktimeout") ?? "100");
  return {
    processPathReason: inProcess,
    author: author?.person ?? "",
    committer: committer?.person ?? "",
    authorDate: fixedAuthorDate ? (author?.date ?? null) : null,
    committerDate: fixedCommitterDate ? (committer?.date ?? null) : null,
    fsyncObjects:
      gitBool(config.get("core.fsyncobjectfiles")) || /loose-object|objects|committed|added|all/.test(fsync),
    sharedRepository: shared != null && !/^(false|no|off|0|umask)$/i.test(shared),
    logAllRefUpdates:
      logAll === undefined
        ? gitBool(config.get("core.bare"))
          ? "none"
          : "normal"
        : logAll !== null && /^always$/i.test(logAll)
          ? "always"
          : gitBool(logAll)
            ? "normal"
            : "none",
    lockTimeoutMs: Number.isFinite(timeout) && timeout >= 0 ? timeout : 10_000,
    referenceTransactionHook:
      hooksPath != null
        ? join(isAbsolute(hooksPath) ? hooksPath : join(repo.root, hooksPath), "reference-transaction")
        : join(repo.commonDir, "hooks", "reference-transaction"),
  };
}

/**
 * The refusal for a missing identity: what is missing, and the exact commands that set it for every
 * repository or for this store only. Git's own advice is left out (its "this repository" would be the
 * store, not the project the user is in); its one-line reason is kept.
 */
export function identityMissing(error: unknown, root: string): StoreError {
  const stderr = error instanceof GitCommandError ? error.stderr : String(error);
  const fatal = /^fatal: (.+)$/m.exec(stderr)?.[1]?.trim();
  const store = shellWord(root);
  return new StoreError(
    "git-identity-missing",
    `Git has no commit identity (user.name and user.email) for the State Flow store ${root}` +
      `${fatal ? ` (git: ${fatal})` : ""}, and State Flow does not invent one. Set it for all your repositories: ` +
      `git config --global user.name "Your Name" && git config --global user.email "you@example.com"; ` +
      `or for this store only: git -C ${store} config user.name "Your Name" && ` +
      `git -C ${store} config user.email "you@example.com".`,
    { cause: error },
  );
}

/** `path` as one POSIX shell word (quoted only when it has to be). */
export function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

export function looksLikeIdentityError(error: unknown): boolean {
  return (
    error instanceof GitCommandError &&
    /identity unknown|no email was given|unable to auto-detect email|empty ident name|Please tell me who you are/i.test(
      error.stderr,
    )
  );
}

/** git's boolean config values (a key without a value is true). */
export function gitBool(value: string | null | undefined): boolean {
  if (value === undefined) return false;
  if (value === null) return true;
  if (/^(true|yes|on)$/i.test(value)) return true;
  if (/^(false|no|off|)$/i.test(value)) return false;
  return /^-?\d+$/.test(value) && Number(value) !== 0;
}

/** Parses `git config -z -l` (`key\nvalue\0`, or `key\0` for a key without value; later values win). */
export function parseConfigList(out: string): Map<string, string | null> {
  const config = new Map<string, string | null>();
  for (const record of out.split("\0")) {
    if (record === "") continue;
    const nl = record.indexOf("\n");
    config.set(nl < 0 ? record : record.slice(0, nl), nl < 0 ? null : record.slice(nl + 1));
  }
  return config;
}
