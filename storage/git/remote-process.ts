// The git processes that talk to a remote (ls-remote, push): the only ones whose duration State
// Flow does not control. Each runs without any way to prompt and under a hard timeout:
//
//   - GIT_TERMINAL_PROMPT=0 and GCM_INTERACTIVE=never: git and Git Credential Manager fail instead
//     of asking for a user name or password (a credential helper that answers without asking still
//     works; so does the user's GIT_ASKPASS, a program that supplies credentials, bounded below);
//   - ssh in batch mode: the user's ssh command (GIT_SSH_COMMAND, core.sshCommand or GIT_SSH) is
//     kept and `-o BatchMode=yes` added (`-batch` for PuTTY's plink), else `ssh -o BatchMode=yes`:
//     no passphrase, password or host-key question;
//   - a session of its own (setsid): no controlling terminal, so nothing the process starts can
//     open /dev/tty to ask anyway, and one process group holding git, ssh and remote helpers;
//   - a timeout that kills that whole group and rejects with RemoteTimeoutError, whose text says
//     what did not answer and what to check. A remote that hangs is a failure with a cause (the
//     publication machine makes it a pending publication), never a hang.
//
// These processes are spawned from this process, never from a helper shell (shell-spawner.ts): a
// helper runs one command to its end and cannot kill its group. Their groups are killed when this
// process exits; and where coreutils' `timeout` is on PATH, git runs under it with a limit one
// second past ours, which kills the group even when this process died without exiting (SIGKILL),
// so no blocked ssh outlives Pi.

import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { basename, delimiter, isAbsolute, join } from "node:path";
import { GitCommandError, type GitRunner } from "./git-runner.ts";

/** Default limits: asking is one round trip; a fetch may download and a push upload a pack. */
export const REMOTE_TIMEOUT_MS = { ask: 10_000, fetch: 30_000, push: 30_000 } as const;
export type RemotePurpose = keyof typeof REMOTE_TIMEOUT_MS;
/** Overrides every limit (milliseconds), e.g. for a slow link or a test. */
export const REMOTE_TIMEOUT_ENV = "STATE_FLOW_REMOTE_TIMEOUT_MS";

/** The limit for one remote command: an explicit override, else STATE_FLOW_REMOTE_TIMEOUT_MS, else the default. */
export function remoteTimeoutMs(
  purpose: RemotePurpose,
  env: Readonly<Record<string, string | undefined>>,
  override?: number,
): number {
  if (override !== undefined && override > 0) return override;
  const fromEnv = Number(env[REMOTE_TIMEOUT_ENV]);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : REMOTE_TIMEOUT_MS[purpose];
}

/** The user's ssh command in batch mode (git runs GIT_SSH_COMMAND through the shell, arguments appended). */
export function batchSshCommand(command: string): string {
  // The program is the command's first word, quoted or not ('C:/Program Files/…/TortoisePlink.exe').
  const first = /^\s*(?:'([^']*)'|"([^"]*)"|(\S+))/.exec(command);
  const program = basename((first?.[1] ?? first?.[2] ?? first?.[3] ?? "").replaceAll("\\", "/"));
  return /^(tortoise)?plink(\.exe)?$/i.test(program) ? `${command} -batch` : `${command} -o BatchMode=yes`;
}

/** `value` as one single-quoted sh word. */
function shellWord(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * The variables every remote command gets. `configured` is core.sshCommand (null: unset); git
 * prefers GIT_SSH_COMMAND over it, and both over GIT_SSH (a program, run without a shell).
 */
export function noPromptEnv(
  env: Readonly<Record<string, string | undefined>>,
  configured: string | null,
): Record<string, string> {
  const ssh = env.GIT_SSH_COMMAND || configured || (env.GIT_SSH ? shellWord(env.GIT_SSH) : "ssh");
  return { GIT_TERMINAL_PROMPT: "0", GCM_INTERACTIVE: "never", GIT_SSH_COMMAND: batchSshCommand(ssh) };
}

/** A remote command that did not finish within its limit; its process group was killed. */
export class RemoteTimeoutError extends GitCommandError {
  readonly timeoutMs: number;
  constructor(args: readonly string[], timeoutMs: number, stderr: string) {
    const remote = args.find((arg, i) => i > 0 && !arg.startsWith("-")) ?? "the remote";
    const seconds = `${Number((timeoutMs / 1000).toFixed(3))} s`;
    super(
      args,
      -1,
      `the remote ${remote} did not answer within ${seconds}, so git ${args[0]} was stopped` +
        `${stderr.trim() ? ` (${stderr.trim()})` : ""}. Check the network and the remote's URL ` +
        `(git remote -v), and that \`GIT_TERMINAL_PROMPT=0 git ls-remote ${remote}\` answers without a ` +
        `prompt (an ssh key in an agent, credentials in a credential helper); ` +
        `${REMOTE_TIMEOUT_ENV} sets another limit.`,
    );
    this.name = "RemoteTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

export interface RemoteRequest {
  readonly binary: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The complete environment (the no-prompt variables included). */
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
  /** coreutils' `timeout`, which runs git when given: the backstop that needs no living parent. */
  readonly watchdog?: string | null;
  /** Aborting kills the process group and rejects (the caller no longer wants the answer). */
  readonly signal?: AbortSignal;
}

/** Process groups of remote commands still running: killed when this process exits. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills git and all it started in its group (ssh, a remote helper); only git itself where there are no groups. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === "win32") child.kill("SIGKILL");
    else process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

const watchdogs = new Map<string, string | null>();

/** The `timeout` program on `path` (a PATH value), or null; looked up once per PATH. */
export function findWatchdog(path: string | undefined): string | null {
  const key = path ?? "";
  if (!watchdogs.has(key)) {
    const found = key
      .split(delimiter)
      .filter((dir) => dir.length > 0 && isAbsolute(dir))
      .map((dir) => join(dir, "timeout"))
      .find((candidate) => {
        try {
          accessSync(candidate, fsConstants.X_OK);
          return statSync(candidate).isFile();
        } catch {
          return false;
        }
      });
    watchdogs.set(key, process.platform === "win32" ? null : (found ?? null));
  }
  return watchdogs.get(key)!;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of running) killGroup(child);
  });
}

export interface RemoteExecOptions {
  readonly purpose: RemotePurpose;
  /** The limit (default: remoteTimeoutMs(purpose, the runner's environment)). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs `git <args>` (a command that talks to a remote) for `runner`: counted like its other
 * processes, with the no-prompt environment, in its own process group, killed at its limit.
 * Reading core.sshCommand costs one local git process, unless GIT_SSH_COMMAND is set.
 */
export async function execRemote(
  runner: GitRunner,
  args: readonly string[],
  options: RemoteExecOptions,
): Promise<Buffer> {
  const env = (name: string) => runner.envValue(name);
  let configured: string | null = null;
  if (!env("GIT_SSH_COMMAND")) {
    configured = await runner.execText(["config", "--get", "core.sshCommand"]).then(
      (out) => out.trim() || null,
      () => null, // unset (exit 1), or unreadable: git would not use it either
    );
  }
  const extra = noPromptEnv({ GIT_SSH_COMMAND: env("GIT_SSH_COMMAND"), GIT_SSH: env("GIT_SSH") }, configured);
  const timeoutMs = remoteTimeoutMs(
    options.purpose,
    { [REMOTE_TIMEOUT_ENV]: env(REMOTE_TIMEOUT_ENV) },
    options.timeoutMs,
  );
  const done = runner.started(args);
  try {
    return await runRemote({
      binary: runner.binary,
      args,
      cwd: runner.cwd,
      env: runner.spawnEnv(extra),
      timeoutMs,
      watchdog: findWatchdog(env("PATH")),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } finally {
    done();
  }
}

/** Runs one remote command to its end, its limit, or an abort; stdout on exit 0, GitCommandError otherwise. */
export function runRemote(request: RemoteRequest): Promise<Buffer> {
  const { args, signal } = request;
  if (signal?.aborted) return Promise.reject(new GitCommandError(args, -1, "aborted before it started"));
  installExitHook();
  return new Promise<Buffer>((resolvePromise, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let spawnError: Error | undefined;
    let done = false;
    // `timeout -s KILL <s> git …` (GNU and busybox alike): a group of its own, killed whole at its limit.
    const backstop = String(Math.ceil(request.timeoutMs / 1000) + 1);
    const [program, argv] = request.watchdog
      ? [request.watchdog, ["-s", "KILL", backstop, request.binary, ...args]]
      : [request.binary, [...args]];
    const child = spawn(program, argv, {
      cwd: request.cwd,
      env: request.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: process.platform !== "win32",
      windowsHide: true,
    });
    running.add(child);
    const errText = () => Buffer.concat(stderr).toString("utf8");
    // Ends the wait once: a killed group settles at once, without waiting for pipes a stray
    // descendant (an ssh control master) might still hold open.
    const finish = (outcome: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      running.delete(child);
      outcome();
    };
    const stop = (error: GitCommandError) =>
      finish(() => {
        killGroup(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
        reject(error);
      });
    const timer = setTimeout(() => stop(new RemoteTimeoutError(args, request.timeoutMs, errText())), request.timeoutMs);
    const onAbort = () => stop(new GitCommandError(args, -1, `aborted${errText() ? `: ${errText()}` : ""}`));
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout!.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", (error) => {
      spawnError ??= error; // e.g. ENOENT: 'close' still follows
    });
    // (Not killed after git ended by itself: its group is gone, and the number could be someone else's.)
    child.on("close", (code, signalName) =>
      finish(() => {
        if (spawnError) reject(new GitCommandError(args, -1, `${spawnError.message}\n${errText()}`.trim()));
        else if (code !== 0)
          reject(new GitCommandError(args, code ?? -1, signalName ? `${errText()}killed by ${signalName}` : errText()));
        else resolvePromise(Buffer.concat(stdout));
      }),
    );
  });
}
