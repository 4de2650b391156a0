// Spawns processes from small long-lived /bin/sh helpers instead of from this process.
//
// Why: node:child_process forks the calling process on Linux, and a fork copies its page tables,
// so a spawn costs more the larger the process is. Measured on the bench machine for one
// `git add -A -v` in a small repository: 4.4 ms from a 55 MiB node process, 12.9 ms at 256 MiB,
// 23.7 ms at 557 MiB; through a helper shell 3.4–3.7 ms at every size. A Pi session that holds a
// long transcript is such a large process, and State Flow spawns git on every accepted cohort.
//
// A helper runs one command at a time (the pool starts another helper when all are busy) and
// reports only its exit status on its own stdout; the command's stdin, stdout and stderr are
// files in the helper's private directory, so output of any size and any bytes passes unchanged.
// Helpers are shared by every caller with the same base environment, never keep this process
// alive, and end after a while without work (or when this process ends: their stdin closes).

import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { unlinkQuietlySync } from "../fs/fs-safe.ts";

const SHELL = "/bin/sh";
/** A helper without work for this long ends; the next command starts a new one. */
const IDLE_MS = 10 * 60_000;

export interface SpawnerOptions {
  /** How long a helper without work lives (default 10 minutes: longer than a user's pause between prompts). */
  readonly idleMs?: number;
  /** Where helpers make their folders (default: the temp directory). */
  readonly tempRoot?: string;
}

export interface SpawnRequest {
  /** Absolute path of the executable. */
  readonly binary: string;
  readonly args: readonly string[];
  /** Absolute working directory. */
  readonly cwd: string;
  /** Variables added to the helper's base environment for this command (names must be shell identifiers). */
  readonly env?: Readonly<Record<string, string>>;
  readonly input?: Buffer | string;
}

export interface SpawnResult {
  /** The exit status (128 + n after signal n), or -1 when the command could not be started. */
  readonly code: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

/** `value` as one single-quoted sh word: every byte but NUL passes literally. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

const NOT_STARTED = {
  "x cd": "cannot enter the working directory",
  "x exec": "the executable is missing or not executable",
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether a helper can run this request exactly as a direct spawn would. */
export function helperCanRun(request: SpawnRequest): boolean {
  return (
    isAbsolute(request.binary) &&
    isAbsolute(request.cwd) &&
    Object.keys(request.env ?? {}).every((name) => IDENTIFIER.test(name)) &&
    [request.binary, request.cwd, ...request.args, ...Object.values(request.env ?? {})].every((s) => !s.includes("\0"))
  );
}

interface Files {
  readonly dir: string;
  readonly input: string;
  readonly stdout: string;
  readonly stderr: string;
}

/** The helper's one line for a request: enter cwd, check the executable, run it with files as stdio, report. */
export function commandLine(request: SpawnRequest, files: Files, withInput: boolean): string {
  const exports = Object.entries(request.env ?? {}).map(([name, value]) => `export ${name}=${shellQuote(value)}; `);
  const argv = [request.binary, ...request.args].map(shellQuote).join(" ");
  const stdin = withInput ? shellQuote(files.input) : "/dev/null";
  return (
    `if ! cd ${shellQuote(request.cwd)} 2>/dev/null; then echo 'x cd'; ` +
    `elif ! [ -f ${shellQuote(request.binary)} ] || ! [ -x ${shellQuote(request.binary)} ]; then echo 'x exec'; ` +
    `else (${exports.join("")}exec ${argv}) <${stdin} >${shellQuote(files.stdout)} 2>${shellQuote(files.stderr)}; ` +
    `echo "$?"; fi\n`
  );
}

class Helper {
  private readonly child: ChildProcess;
  private readonly files: Files;
  private pending: { resolve: (r: SpawnResult) => void; reject: (e: Error) => void; withInput: boolean } | null = null;
  private buffered = "";
  private shellErrors = "";
  private idle: NodeJS.Timeout | null = null;
  private readonly onGone: (helper: Helper) => void;
  private retired = false;
  private exited = false;

  private readonly idleMs: number;

  constructor(env: Readonly<Record<string, string>>, options: Required<SpawnerOptions>, onGone: (h: Helper) => void) {
    this.onGone = onGone;
    this.idleMs = options.idleMs;
    const dir = mkdtempSync(join(options.tempRoot, "state-flow-spawn-"));
    this.files = { dir, input: join(dir, "in"), stdout: join(dir, "out"), stderr: join(dir, "err") };
    this.child = spawn(SHELL, [], { cwd: dir, env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8");
    this.child.stdout!.on("data", (chunk: string) => this.received(chunk));
    this.child.stderr!.setEncoding("utf8");
    this.child.stderr!.on("data", (chunk: string) => (this.shellErrors = (this.shellErrors + chunk).slice(-2000)));
    this.child.stdin!.on("error", () => undefined); // a helper that died is reported by 'close'
    this.child.on("error", (error) => this.gone(error.message));
    this.child.on("close", (code, signal) => this.gone(`exit ${signal ?? code}`));
    // The shell removes its directory itself when it ends, also after this process was killed (its stdin closes).
    this.child.stdin!.write(`trap ${shellQuote(`rm -rf ${shellQuote(dir)}`)} EXIT\n`);
    this.rest();
  }

  /** Whether this helper cannot take a command now: running one, ending, or gone. */
  get unavailable(): boolean {
    return this.pending !== null || this.retired || this.exited;
  }

  run(request: SpawnRequest): Promise<SpawnResult> {
    const withInput = request.input !== undefined;
    try {
      if (withInput) writeFileSync(this.files.input, request.input!, { mode: 0o600 });
    } catch (error) {
      return Promise.reject(this.retire(error));
    }
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    this.hold(true);
    return new Promise<SpawnResult>((resolve, reject) => {
      this.pending = { resolve, reject, withInput };
      this.child.stdin!.write(commandLine(request, this.files, withInput));
    });
  }

  /**
   * This helper's folder failed it (removed by a temp cleaner, a full disk): it ends, and the
   * spawner starts a new helper with a new folder for the next command.
   */
  private retire(error: unknown): Error {
    this.retired = true;
    this.end();
    return new Error(`the helper shell's folder ${this.files.dir} failed: ${(error as Error).message ?? error}`);
  }

  end(): void {
    this.child.stdin!.end();
  }

  private received(chunk: string): void {
    this.buffered += chunk;
    const newline = this.buffered.indexOf("\n");
    if (newline < 0 || !this.pending) return;
    const status = this.buffered.slice(0, newline);
    this.buffered = this.buffered.slice(newline + 1);
    const { resolve, reject, withInput } = this.pending;
    this.pending = null;
    if (withInput) unlinkQuietlySync(this.files.input);
    let result: SpawnResult;
    try {
      result =
        status === "x cd" || status === "x exec"
          ? { code: -1, stdout: Buffer.alloc(0), stderr: Buffer.from(NOT_STARTED[status]) }
          : { code: Number(status), stdout: this.take(this.files.stdout), stderr: this.take(this.files.stderr) };
    } catch (error) {
      reject(this.retire(error));
      return;
    }
    this.rest();
    resolve(result);
  }

  private take(file: string): Buffer {
    const bytes = readFileSync(file);
    unlinkQuietlySync(file);
    return bytes;
  }

  /** Idle: this helper must not keep the process alive, and ends after IDLE_MS. */
  private rest(): void {
    this.hold(false);
    this.idle = setTimeout(() => this.end(), this.idleMs);
    this.idle.unref();
  }

  private hold(busy: boolean): void {
    for (const handle of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as const) {
      const refable = handle as unknown as { ref?: () => void; unref?: () => void };
      if (busy) refable.ref?.();
      else refable.unref?.();
    }
  }

  private gone(reason: string): void {
    if (this.exited) return;
    this.exited = true;
    if (this.idle) clearTimeout(this.idle);
    rmSync(this.files.dir, { recursive: true, force: true });
    this.onGone(this);
    const pending = this.pending;
    this.pending = null;
    const detail = this.shellErrors.trim();
    pending?.reject(new Error(`the helper shell ended (${reason})${detail ? `: ${detail}` : ""}`));
  }
}

/** The helpers of one base environment. */
export class ShellSpawner {
  private static readonly byEnvironment = new Map<string, ShellSpawner>();
  private static shellAvailable: boolean | undefined;
  private readonly helpers: Helper[] = [];
  private readonly env: Readonly<Record<string, string>>;
  private readonly options: SpawnerOptions;
  private commands = 0;

  private constructor(env: Readonly<Record<string, string>>, options: SpawnerOptions) {
    this.env = env;
    this.options = options;
  }

  /** A spawner of its own, shared with nobody (tests). Throws where there is no /bin/sh. */
  static create(env: Readonly<Record<string, string>>, options: SpawnerOptions = {}): ShellSpawner {
    if (!ShellSpawner.hasShell()) throw new Error(`${SHELL} is not available`);
    return new ShellSpawner(env, options);
  }

  /** The spawner shared by every caller with this base environment; null where there is no /bin/sh. */
  static forEnvironment(env: Readonly<Record<string, string>>): ShellSpawner | null {
    if (!ShellSpawner.hasShell()) return null;
    const key = JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    let spawner = ShellSpawner.byEnvironment.get(key);
    if (!spawner) ShellSpawner.byEnvironment.set(key, (spawner = new ShellSpawner(env, {})));
    return spawner;
  }

  private static hasShell(): boolean {
    if (ShellSpawner.shellAvailable === undefined) {
      try {
        accessSync(SHELL, fsConstants.X_OK);
        ShellSpawner.shellAvailable = process.platform !== "win32";
      } catch {
        ShellSpawner.shellAvailable = false;
      }
    }
    return ShellSpawner.shellAvailable;
  }

  /**
   * Whether the next command should run in a helper. The first command of each spawner runs
   * directly: a process that runs git once (a resume that only reads) would pay for starting a
   * helper, itself a spawn, and gain nothing.
   */
  wantsHelper(): boolean {
    return this.commands++ > 0;
  }

  /** Runs the request in an idle helper (a new one when all are busy). Rejects only when the helper itself ends. */
  run(request: SpawnRequest): Promise<SpawnResult> {
    let helper = this.helpers.find((h) => !h.unavailable);
    if (!helper) {
      const options = { idleMs: this.options.idleMs ?? IDLE_MS, tempRoot: this.options.tempRoot ?? tmpdir() };
      helper = new Helper(this.env, options, (gone) => this.forget(gone));
      this.helpers.push(helper);
    }
    return helper.run(request);
  }

  /** Ends every helper once its command (if any) is done. */
  close(): void {
    for (const helper of this.helpers) helper.end();
  }

  private forget(helper: Helper): void {
    const index = this.helpers.indexOf(helper);
    if (index >= 0) this.helpers.splice(index, 1);
  }

  /** Helpers currently running (tests). */
  get size(): number {
    return this.helpers.length;
  }
}
