// The one place that spawns git. Every spawned process is counted (and optionally timed) so the
// bench and the tests can report git process counts per operation. Output is collected without
// any size limit (no 1 MiB maxBuffer), stdin is supported, any non-zero exit is an error, and
// the git executable is located on PATH ourselves so that "git absent" is a fact we decide, not
// an error message we guess from.
//
// Two ways to run git, chosen by measurement (npm run bench:store prints the `spawn` figures):
//   - `exec` starts git from a small helper shell (shell-spawner.ts: a spawn from node forks the
//     whole process, so it costs more the larger a Pi session grows), or directly with
//     node:child_process where no helper can run it exactly (no /bin/sh, Windows) or where
//     STATE_FLOW_GIT_SPAWN=direct says so. It serves the per-cohort hot path (publication,
//     current view, revision reads) and every command that prints nothing on success, where
//     simple-git would not do: simple-git 4.0.2's completion plugin sleeps a fixed 50 ms after
//     any process that wrote nothing to stdout/stderr (`c && await wt(50)` in dist/index.mjs,
//     not configurable), which made `add`, `update-ref` and `init` cost 50+ ms each; the earlier
//     workarounds (GIT_TRACE=1, --verbose, update-ref --stdin transactions) only existed to make
//     git talk. Apart from that, simple-git adds a builder, plugin chain and task queue per call
//     (measured ≈ 0.3–1 ms per process on the bench machine, against ≈ 3–5 ms for the process).
//   - `run` keeps simple-git (the project's Git library) for cold, talkative commands where it
//     costs nothing measurable: `--version`, `config`, `var`. (`rev-parse` at open is
//     spawned directly: a resume's CPU profile showed 4–7 ms of simple-git for that one call.)
// Commands that talk to a remote (ls-remote, push) use neither: remote-process.ts runs them
// without any way to prompt and kills them at a time limit.

import { spawn } from "node:child_process";
import type { SimpleGit } from "simple-git";
import { StoreError } from "../store-error.ts";
import { ShellSpawner, helperCanRun, type SpawnRequest, type SpawnResult } from "./shell-spawner.ts";
import { findGitExecutable } from "./git-executable.ts";

export { findGitExecutable };

/** How a git process was started: directly, from a helper shell (shell-spawner.ts), or by simple-git. */
export type GitVia = "spawn" | "shell" | "simple-git";

export interface GitProcessCounter {
  count: number;
  /** When present, every process appends its arguments and wall time (spawn to close) here (bench). */
  log?: Array<{ readonly args: readonly string[]; readonly ms: number; readonly via: GitVia }>;
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
  /** How `exec` starts git: from a helper shell where one exists (default), or always directly. */
  readonly spawn?: "shell" | "direct";
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

/** simple-git (and its dependencies) load at the first `run`: the hot path and a resume's open never need it. */
let simpleGitModule: Promise<typeof import("simple-git")> | null = null;
const loadSimpleGit = () => (simpleGitModule ??= import("simple-git"));

/** STATE_FLOW_GIT_SPAWN=direct turns the helper shells off (a system where they misbehave, an A/B measurement). */
function spawnPreference(env: Record<string, string>): "shell" | "direct" {
  return env.STATE_FLOW_GIT_SPAWN === "direct" ? "direct" : "shell";
}

function cleanGitEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
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
  private readonly spawner: ShellSpawner | null;

  constructor(options: GitRunnerOptions & { binary: string }) {
    this.cwd = options.cwd;
    this.binary = options.binary;
    this.counter = options.counter ?? { count: 0 };
    this.env = cleanGitEnv(options.env);
    const direct = (options.spawn ?? spawnPreference(this.env)) === "direct";
    this.spawner = direct ? null : ShellSpawner.forEnvironment(this.env);
  }

  /** A variable of the environment every git process of this runner gets (per-call overrides aside). */
  envValue(name: string): string | undefined {
    return this.env[name];
  }

  /** The complete environment of a process this runner's caller spawns itself (remote-process.ts). */
  spawnEnv(extra: Record<string, string>): Record<string, string> {
    return { ...this.env, ...extra };
  }

  /** Counts a git process spawned outside this runner (remote-process.ts); call the result when it ended. */
  started(args: readonly string[]): () => void {
    this.counter.count += 1;
    const started = performance.now();
    return () => this.record(args, started, "spawn");
  }

  private async client(
    input: Buffer | string | undefined,
    extraEnv: Record<string, string> | undefined,
    failure: { exit?: number; stderr?: string },
  ): Promise<SimpleGit> {
    const env = extraEnv ? { ...this.env, ...extraEnv } : this.env;
    const { simpleGit } = await loadSimpleGit();
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
    return new GitCommandError(
      args,
      failure.exit ?? -1,
      failure.stderr ?? (error instanceof Error ? error.message : String(error)),
    );
  }

  private record(args: readonly string[], started: number, via: GitVia): void {
    this.counter.log?.push({ args, ms: performance.now() - started, via });
  }

  /**
   * Runs git through simple-git and returns stdout as UTF-8 text (cold, talkative commands only:
   * a command that prints nothing on success costs simple-git's fixed 50 ms, use `exec`).
   * Throws GitCommandError on any non-zero exit.
   */
  async run(
    args: readonly string[],
    options?: { input?: Buffer | string; env?: Record<string, string> },
  ): Promise<string> {
    const failure: { exit?: number; stderr?: string } = {};
    this.counter.count += 1;
    const started = performance.now();
    try {
      return await (await this.client(options?.input, options?.env, failure)).raw([...args]);
    } catch (error) {
      throw this.fail(args, failure, error);
    } finally {
      this.record(args, started, "simple-git");
    }
  }

  /**
   * Spawns git directly and returns raw stdout bytes (unbounded). stdin gets `input` (or is
   * closed), stderr is kept for the error. Throws GitCommandError on a spawn failure (exit -1),
   * a signal, or any non-zero exit.
   */
  exec(args: readonly string[], options?: { input?: Buffer | string; env?: Record<string, string> }): Promise<Buffer> {
    this.counter.count += 1;
    const started = performance.now();
    const request: SpawnRequest = {
      binary: this.binary,
      args,
      cwd: this.cwd,
      env: options?.env,
      input: options?.input,
    };
    if (this.spawner && helperCanRun(request) && this.spawner.wantsHelper())
      return this.execInHelper(this.spawner, request, started);
    return this.execDirectly(request, started);
  }

  private async execInHelper(spawner: ShellSpawner, request: SpawnRequest, started: number): Promise<Buffer> {
    const { args } = request;
    let result: SpawnResult;
    try {
      result = await spawner.run(request);
    } catch (error) {
      throw new GitCommandError(args, -1, error instanceof Error ? error.message : String(error));
    } finally {
      this.record(args, started, "shell");
    }
    if (result.code !== 0) throw new GitCommandError(args, result.code, result.stderr.toString("utf8"));
    return result.stdout;
  }

  private execDirectly(request: SpawnRequest, started: number): Promise<Buffer> {
    const { args, input } = request;
    return new Promise<Buffer>((resolvePromise, reject) => {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let spawnError: Error | undefined;
      const child = spawn(this.binary, [...args], {
        cwd: this.cwd,
        env: request.env ? { ...this.env, ...request.env } : this.env,
        stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        windowsHide: true,
      });
      child.stdout!.on("data", (chunk: Buffer) => stdout.push(chunk));
      child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
      child.on("error", (error) => {
        spawnError ??= error; // e.g. EACCES/ENOENT: 'close' still follows
      });
      child.on("close", (code, signal) => {
        this.record(args, started, "spawn");
        const errText = Buffer.concat(stderr).toString("utf8");
        if (spawnError) reject(new GitCommandError(args, -1, `${spawnError.message}${errText ? `\n${errText}` : ""}`));
        else if (code !== 0)
          reject(new GitCommandError(args, code ?? -1, signal ? `${errText}killed by ${signal}` : errText));
        else resolvePromise(Buffer.concat(stdout));
      });
      if (input !== undefined) {
        // git may exit before reading all of stdin (it failed): the exit status reports that, not EPIPE.
        child.stdin!.on("error", () => undefined);
        child.stdin!.end(input);
      }
    });
  }

  /** `exec` with stdout decoded as UTF-8. */
  async execText(
    args: readonly string[],
    options?: { input?: Buffer | string; env?: Record<string, string> },
  ): Promise<string> {
    return (await this.exec(args, options)).toString("utf8");
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
