// Where a run's wall time goes, measured from outside the product (bench/e2e.ts): the State Flow
// extension is loaded through a proxy of Pi's ExtensionAPI that times every hook it registers and
// both phases of its tools (prepareArguments = State Flow's patch validation, execute), and the
// prototypes of the product's exported classes (and of Pi's SessionManager and Node's FileHandle)
// get timing wrappers. Nothing in the product changes; TypeScript's `private` methods are ordinary
// prototype methods at run time, so the store's inner steps can be timed as well.
//
// Each timed call records an interval. Per run the intervals of one phase are merged (their union),
// so parallel work (fsyncs issued together, a git process overlapping the temp-file writes) is not
// counted twice.

import { createRequire, syncBuiltinESMExports } from "node:module";
import { open, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExtensionAPI, ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { StateFlowController } from "../adapters/pi/controller.ts";
import { FlowRuntime } from "../runtime/flow-runtime.ts";
import { BranchBinding } from "../runtime/branch-binding.ts";
import { RunSession } from "../runtime/run-session.ts";
import { KnowledgeRun } from "../runtime/knowledge-run.ts";
import { StateStore } from "../storage/state-store.ts";
import { FileBackend } from "../storage/file/file-backend.ts";
import { GitBackend } from "../storage/git/git-backend.ts";
import { GitCommitter } from "../storage/git/git-commit.ts";
import { GitPublisher } from "../storage/git/git-publication.ts";
import { GitRemote } from "../storage/git/git-remote.ts";
import { GitRepo } from "../storage/git/git-repo.ts";
import { GitRunner } from "../storage/git/git-runner.ts";

export interface Interval {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

let intervals: Interval[] = [];
/** Names the wrappers could not find (a renamed method): reported, never silently zero. */
export const missing: string[] = [];

export function takeIntervals(): Interval[] {
  const taken = intervals;
  intervals = [];
  return taken;
}

/** Restores what the detail pass wrapped (the per-call file system wrappers). */
let unwrapDetail: (() => void) | null = null;

/**
 * The detail pass: every node:fs/promises call and FileHandle method is timed as well. Installed
 * only for that pass and removed after it, because it costs a few µs per call and a file-only
 * publication makes hundreds of calls.
 */
export async function setDetail(on: boolean): Promise<void> {
  if (!on) {
    unwrapDetail?.();
    unwrapDetail = null;
    syncBuiltinESMExports();
    return;
  }
  if (unwrapDetail) return;
  const fileHandle = await fileHandlePrototype();
  const fsp = createRequire(import.meta.url)("node:fs/promises") as Record<string, unknown>;
  const fs = createRequire(import.meta.url)("node:fs") as Record<string, unknown>;
  const restore = [
    wrapMethods("fs", fileHandle, ["readFile", "writeFile", "stat"], undefined, "fh."),
    // Wrapped on the module's exports, then synchronized into the ESM bindings the product imported.
    wrapMethods("fs", fsp, FS_PROMISES, undefined, "fs."),
    // The store's hot paths make their small calls synchronously (see fsyncDescriptor).
    wrapMethods("fs", fs, FS_SYNC, undefined, "fs."),
  ];
  syncBuiltinESMExports();
  unwrapDetail = () => restore.forEach((undo) => undo());
}

const FS_PROMISES = ["lstat", "stat", "open", "readFile", "writeFile", "rename", "unlink", "mkdir", "readdir"];
const FS_SYNC = [
  "lstatSync",
  "statSync",
  "fstatSync",
  "openSync",
  "closeSync",
  "readFileSync",
  "writeSync",
  "writeFileSync",
  "renameSync",
  "unlinkSync",
  "mkdirSync",
  "utimesSync",
];

async function fileHandlePrototype(): Promise<object> {
  const path = join(tmpdir(), `sf-bench-probe-${process.pid}`);
  const probe = await open(path, "w");
  await probe.close();
  await unlink(path);
  return Object.getPrototypeOf(probe) as object;
}

function record(name: string, start: number): void {
  intervals.push({ name, start, end: performance.now() });
}

/** Calls `fn`, recording its wall time (until its promise settles when it returns one). */
function timed<T>(name: string, fn: () => T): T {
  const start = performance.now();
  let result: T;
  try {
    result = fn();
  } catch (error) {
    record(name, start);
    throw error;
  }
  if (result && typeof (result as { then?: unknown }).then === "function") {
    return (result as unknown as Promise<unknown>).then(
      (value) => (record(name, start), value),
      (error: unknown) => {
        record(name, start);
        throw error;
      },
    ) as T;
  }
  record(name, start);
  return result;
}

type AnyFn = (this: unknown, ...args: unknown[]) => unknown;

/** Wraps methods of `proto` with timing; returns the undo. */
function wrapMethods(
  label: string,
  proto: object,
  names: readonly string[],
  nameOf?: (args: unknown[]) => string,
  prefix = `${label}.`,
): () => void {
  const target = proto as Record<string, unknown>;
  const originals: [string, unknown][] = [];
  for (const method of names) {
    const original = target[method];
    if (typeof original !== "function") {
      missing.push(`${label}.${method}`);
      continue;
    }
    originals.push([method, original]);
    target[method] = function (this: unknown, ...args: unknown[]) {
      const name = nameOf ? nameOf(args) : `${prefix}${method}`;
      return timed(name, () => (original as AnyFn).apply(this, args));
    };
  }
  return () => {
    for (const [method, original] of originals) target[method] = original;
  };
}

/** `git:<subcommand>` of a GitRunner call (its `-c key=value` pairs skipped). */
function gitName(args: unknown[]): string {
  const argv = (args[0] as string[]) ?? [];
  let i = 0;
  while (argv[i] === "-c") i += 2;
  return `git:${argv[i] ?? "?"}${argv[i] === "add" || argv[i] === "cat-file" ? ` ${argv[i + 1] ?? ""}` : ""}`;
}

let installed = false;

/** Installs the prototype wrappers once per process (every later session is measured through them). */
export async function installPhaseWrappers(): Promise<void> {
  if (installed) return;
  installed = true;
  wrapMethods("FlowRuntime", FlowRuntime.prototype, [
    "patchState",
    "prepared",
    "projection",
    "runAnnounced",
    "draft",
    "turnEnd",
    "runEnded",
    "sessionStart",
  ]);
  // (where these steps now live, under the names the earlier figures used)
  wrapMethods("FlowRuntime", BranchBinding.prototype, ["accept"]);
  wrapMethods("FlowRuntime", RunSession.prototype, ["commitResponse"]);
  wrapMethods("KnowledgeRun", KnowledgeRun.prototype, ["ready", "invalidations", "plan"]);
  wrapMethods("StateStore", StateStore.prototype, [
    "liveMoves",
    "commit",
    "commitOnce",
    "prepare",
    "afterPublish",
    "refresh",
    "loadCurrent",
    "loadPointer",
    "unrecordedSuccessor",
  ]);
  wrapMethods("FileBackend", FileBackend.prototype, ["loadCurrent", "loadRevision", "publish", "finishInterrupted"]);
  // The Git backend's phases live in its modules; they keep the GitBackend prefix, so runs compare across versions.
  wrapMethods("GitBackend", GitBackend.prototype, ["loadCurrent", "loadRevision", "publish", "head", "lastCommitOf"]);
  wrapMethods("GitBackend", GitPublisher.prototype, [
    "publishLocked",
    "settlePreparation",
    "stageWorktree",
    "writeBlobs",
    "installPublication",
  ]);
  wrapMethods("GitBackend", GitCommitter.prototype, [
    "commitStaged",
    "overlayInProcess",
    "overlayByGit",
    "commitInProcess",
    "commitByGit",
  ]);
  wrapMethods("GitBackend", GitRepo.prototype, ["commitSettings"]);
  wrapMethods("GitBackend", GitRemote.prototype, ["publicationRemote"]);
  // One process each (execText goes through exec).
  wrapMethods("GitRunner", GitRunner.prototype, ["exec", "run"], gitName);
  wrapMethods("StateFlowController", StateFlowController.prototype, ["context", "prepareContext"]);
  wrapMethods("SessionManager", SessionManager.prototype, ["_persist", "getBranch", "getEntries"]);
  // State Flow's fsyncs go through node:fs fsync (storage/fs/fs-safe.ts fsyncDescriptor: temp copies, the
  // journal, directories, the ref) or FileHandle.sync (loose objects when core.fsync asks for it).
  wrapMethods("fs", await fileHandlePrototype(), ["sync"], () => "fsync");
  const fs = createRequire(import.meta.url)("node:fs") as Record<string, AnyFn>;
  const fsync = fs.fsync!;
  fs.fsync = (...[fd, callback]: unknown[]) => {
    const start = performance.now();
    fsync(fd, (error: unknown) => {
      record("fsync", start);
      (callback as AnyFn)(error);
    });
  };
  syncBuiltinESMExports();
}

/**
 * State Flow's extension factory behind a proxy of Pi's ExtensionAPI: every hook handler, tool
 * phase and command it registers is timed.
 */
export function timedExtension(factory: ExtensionFactory): ExtensionFactory {
  return (pi: ExtensionAPI) => {
    const own = (name: string, fn: () => unknown) => timed(name, fn);
    const proxy = new Proxy(pi, {
      get(target, key, receiver) {
        if (key === "on") {
          return (event: string, handler: AnyFn) =>
            (target.on as AnyFn).call(target, event, (...args: unknown[]) =>
              own(`hook:${event}`, () => handler(...args)),
            );
        }
        if (key === "registerTool") {
          return (tool: Record<string, unknown>) => {
            const wrapped: Record<string, unknown> = { ...tool };
            for (const phase of ["prepareArguments", "execute"]) {
              const fn = tool[phase];
              if (typeof fn === "function")
                wrapped[phase] = (...args: unknown[]) =>
                  own(`tool:${String(tool.name)}.${phase}`, () => (fn as AnyFn).apply(tool, args));
            }
            return (target.registerTool as AnyFn).call(target, wrapped);
          };
        }
        if (key === "registerCommand") {
          return (name: string, command: Record<string, unknown>) => {
            const handler = command.handler as AnyFn;
            return (target.registerCommand as AnyFn).call(target, name, {
              ...command,
              handler: (...args: unknown[]) => own(`command:${name}`, () => handler(...args)),
            });
          };
        }
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return factory(proxy);
  };
}

/** Total length of the union of intervals (overlaps counted once). */
export function unionMs(list: readonly { start: number; end: number }[]): number {
  const sorted = [...list].sort((a, b) => a.start - b.start);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const { start, end } of sorted) {
    if (start > to) {
      if (to > from) total += to - from;
      from = start;
      to = end;
    } else if (end > to) to = end;
  }
  if (to > from) total += to - from;
  return total;
}

/** The State Flow hook and tool phases (what Pi waits for while State Flow works). */
export const isStateFlowPhase = (name: string) =>
  name.startsWith("hook:") || name.startsWith("tool:") || name.startsWith("command:");

/** Per-run phase figures (ms): every phase's union, plus derived rows. */
export function phaseTable(list: readonly Interval[], runMs: number): Record<string, number> {
  const by = new Map<string, Interval[]>();
  const add = (name: string, interval: Interval) => {
    const list = by.get(name);
    if (list) list.push(interval);
    else by.set(name, [interval]);
  };
  // Pi waits for each hook it calls, so what runs inside a State Flow hook or tool phase was caused
  // by State Flow: work Pi does on its behalf (its session file, its branch walks) is told apart.
  const owned = list.filter((i) => isStateFlowPhase(i.name)).sort((a, b) => a.start - b.start);
  const insideStateFlow = (i: Interval) => owned.some((o) => o.start <= i.start && i.end <= o.end);
  for (const interval of list) {
    add(interval.name, interval);
    if (/^(SessionManager\.|fsync|git:|fs\.|fh\.)/.test(interval.name))
      add(`${interval.name} [${insideStateFlow(interval) ? "State Flow" : "Pi"}]`, interval);
    if (interval.name.startsWith("git:")) add("git processes (all)", interval);
    if (/^(fs\.|fh\.|fsync)/.test(interval.name)) add("fs calls (all)", interval);
  }
  const table: Record<string, number> = {};
  for (const [name, items] of by) table[name] = unionMs(items);
  for (const [name, items] of by)
    if (/^(fs\.|fh\.|fsync|git:|fs calls|git processes)/.test(name)) table[`${name} (calls)`] = items.length;
  const stateFlow = unionMs(list.filter((i) => isStateFlowPhase(i.name)));
  table["State Flow (all hooks and tools)"] = stateFlow;
  table["Pi itself (run minus State Flow)"] = runMs - stateFlow;
  const commitOnce = table["StateStore.commitOnce"] ?? 0;
  if (commitOnce > 0) {
    const publish = (table["GitBackend.publish"] ?? 0) + (table["FileBackend.publish"] ?? 0);
    table["StateStore stage+serialize (commitOnce − prepare − publish)"] =
      commitOnce - (table["StateStore.prepare"] ?? 0) - publish - (table["StateStore.afterPublish"] ?? 0);
  }
  return table;
}
