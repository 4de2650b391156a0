// The one place that spawns git (through simple-git 4). Every spawned process is counted so the
// bench and the tests can report git process counts per operation. Output is collected without
// any size limit (no 1 MiB maxBuffer), stdin is supported, any non-zero exit is an error, and
// the git executable is located on PATH ourselves so that "git absent" is a fact we decide, not
// an error message we guess from.

import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { simpleGit, type SimpleGit } from "simple-git";
import { StoreError } from "./store-error.ts";

/** A GIT_TRACE line ("13:14:14.748159 git.c:460  trace: built-in: git add -A"). */
const TRACE_LINE = /^\d\d:\d\d:\d\d\.\d+ \S+:\d+ +trace: /;

export interface GitProcessCounter {
  count: number;
}

/** Environment variables that would redirect git away from the store repository; never inherited. */
const REPO_LOCATION_VARS = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
  "GIT_QUARANTINE_PATH",
];

// The environment is the user's own (their ssh command, askpass, config paths, editor); the
// arguments are built here, never from model or user text. simple-git's guards exist to protect
// callers passing untrusted arguments, so they are opened for this internal runner.
const UNSAFE_ALLOWED = Object.fromEntries(
  [
    "allowUnsafeAlias",
    "allowUnsafeAskPass",
    "allowUnsafeCommandBinaries",
    "allowUnsafeConfigEnvCount",
    "allowUnsafeConfigPaths",
    "allowUnsafeCredentialHelper",
    "allowUnsafeDiffExternal",
    "allowUnsafeDiffTextConv",
    "allowUnsafeEditor",
    "allowUnsafeExec",
    "allowUnsafeFilter",
    "allowUnsafeFsMonitor",
    "allowUnsafeGitProxy",
    "allowUnsafeGpgProgram",
    "allowUnsafeHooksPath",
    "allowUnsafeInclude",
    "allowUnsafeMergeDriver",
    "allowUnsafePack",
    "allowUnsafePager",
    "allowUnsafeProtocolOverride",
    "allowUnsafeSshCommand",
    "allowUnsafeSubmodule",
    "allowUnsafeTemplateDir",
    "allowUnsafeUrlRewrite",
    "allowUnsafeCustomBinary",
  ].map((key) => [key, true]),
);

export interface GitRunnerOptions {
  /** Working directory of every git command (the store root). */
  readonly cwd: string;
  /** Base environment (default process.env). Repo-location variables are removed. */
  readonly env?: NodeJS.ProcessEnv;
  /** Absolute path of the git executable (default: `git` found on env.PATH). */
  readonly binary?: string;
  readonly counter?: GitProcessCounter;
}

export class GitCommandError extends Error {
  readonly exitCode: number;
  readonly stderr: string;
  readonly args: readonly string[];
  constructor(args: readonly string[], exitCode: number, stderr: string) {
    super(`git ${args.join(" ")} failed (exit ${exitCode}): ${stderr.trim() || "(no output)"}`);
    this.name = "GitCommandError";
    this.args = args;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** Finds an executable `git` on PATH (or checks an explicit binary); null when absent. */
export function findGitExecutable(env: NodeJS.ProcessEnv = process.env, binary?: string): string | null {
  const candidates = binary
    ? [binary]
    : (env.PATH ?? "")
        .split(delimiter)
        .filter((dir) => dir.length > 0 && isAbsolute(dir))
        .map((dir) => join(dir, process.platform === "win32" ? "git.exe" : "git"));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export function cleanGitEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || REPO_LOCATION_VARS.includes(key.toUpperCase())) continue;
    clean[key] = value;
  }
  return clean;
}

export class GitRunner {
  readonly cwd: string;
  readonly binary: string;
  readonly counter: GitProcessCounter;
  private readonly env: Record<string, string>;

  constructor(options: GitRunnerOptions & { binary: string }) {
    this.cwd = options.cwd;
    this.binary = options.binary;
    this.counter = options.counter ?? { count: 0 };
    this.env = cleanGitEnv(options.env);
  }

  private client(input: Buffer | string | undefined, extraEnv: Record<string, string> | undefined, failure: { exit?: number; stderr?: string }): SimpleGit {
    const env = extraEnv ? { ...this.env, ...extraEnv } : this.env;
    return simpleGit({
      baseDir: this.cwd,
      binary: this.binary,
      trimmed: false,
      maxConcurrentProcesses: 8,
      completion: { onClose: true, onExit: false },
      allowEnvironment: Object.keys(env),
      unsafe: UNSAFE_ALLOWED,
      ...(input === undefined ? {} : { input: () => input }),
      errors: (error, result) => {
        if (result.exitCode === 0 && error === undefined) return undefined;
        failure.exit = result.exitCode;
        failure.stderr = Buffer.concat(result.stdErr).toString("utf8");
        return error ?? new Error(`exit ${result.exitCode}`);
      },
    }).env(env);
  }

  private fail(args: readonly string[], failure: { exit?: number; stderr?: string }, error: unknown): GitCommandError {
    const stderr = (failure.stderr ?? (error instanceof Error ? error.message : String(error)))
      .split("\n")
      .filter((line) => !TRACE_LINE.test(line))
      .join("\n");
    return new GitCommandError(args, failure.exit ?? -1, stderr);
  }

  /**
   * Runs git and returns stdout as UTF-8 text. Throws GitCommandError on any non-zero exit.
   * `silent: true` marks a command that prints nothing on success: simple-git 4.0.2 waits a fixed
   * 50 ms after any process that produced no output (completion plugin), so such commands get
   * GIT_TRACE=1 (one trace line on stderr, filtered from error messages) to end without that delay.
   */
  async run(args: readonly string[], options?: { input?: Buffer | string; env?: Record<string, string>; silent?: boolean }): Promise<string> {
    const failure: { exit?: number; stderr?: string } = {};
    this.counter.count += 1;
    const env = options?.silent ? { ...options.env, GIT_TRACE: "1" } : options?.env;
    try {
      return await this.client(options?.input, env, failure).raw([...args]);
    } catch (error) {
      throw this.fail(args, failure, error);
    }
  }

  /** Runs `git cat-file <args>` and returns raw stdout bytes (unbounded). */
  async catFileBuffer(args: readonly string[], input: Buffer | string): Promise<Buffer> {
    const failure: { exit?: number; stderr?: string } = {};
    this.counter.count += 1;
    try {
      return await this.client(input, undefined, failure).binaryCatFile([...args]);
    } catch (error) {
      throw this.fail(["cat-file", ...args], failure, error);
    }
  }
}

/** Wraps a git failure as a named store error (never "git absent"). */
export function gitFailed(what: string, error: unknown, file?: string): StoreError {
  const detail = error instanceof Error ? error.message : String(error);
  return new StoreError(
    "git-failed",
    `${what} failed: ${detail}. Git is installed, so State Flow does not fall back to file-only storage; ` +
      `fix the repository (permissions, corruption, configuration) and retry.`,
    { ...(file === undefined ? {} : { file }), cause: error },
  );
}
