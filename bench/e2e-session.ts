// One benchmark session (bench/e2e.ts and its resume child): a real Pi AgentSession over Pi's faux
// model (the offline recipe the demo and the tests share), with or without State Flow, its store
// at an explicit root, bound to a UI that only records notices.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager, type AgentSession } from "@earendil-works/pi-coding-agent";
import { createStateFlowExtension } from "../index.ts";
import {
  createOfflineSession,
  isolatedGitEnv,
  offlineCommandActions,
  type OfflineSession,
} from "../adapters/pi/offline-session.ts";
import type { RuntimeAccessor } from "../adapters/pi/controller.ts";
import { timedExtension } from "./e2e-phases.ts";

import type { Mode } from "./e2e-config.ts";

export type { Mode };

export interface CaseDirs {
  /** The project directory (Pi's cwd): the files the runs read, native's state file. */
  readonly cwd: string;
  readonly sessionDir: string;
  readonly storeRoot: string;
  /** Every git process State Flow starts appends one line here (the `git` wrapper first on PATH). */
  readonly gitCounter: string;
}

export interface OpenOptions {
  readonly mode: Mode;
  readonly agentDir: string;
  readonly dirs: CaseDirs;
  /** The environment State Flow runs git with (PATH decides file-only vs Git). */
  readonly env: NodeJS.ProcessEnv;
  /** Open this session file instead of creating a session (resume). */
  readonly sessionFile?: string;
  /** Time State Flow's hooks and tools (bench/e2e-phases.ts). */
  readonly timed?: boolean;
}

export interface BenchSession {
  /** Pi's session with its extensions loaded, then bound (session_start: State Flow restores or starts). */
  readonly createMs: number;
  readonly bindMs: number;
  readonly session: AgentSession;
  readonly faux: OfflineSession["faux"];
  readonly accessor: RuntimeAccessor | undefined;
  readonly notices: { message: string; level: string }[];
}

/** A directory holding a `git` that appends its arguments to `counter`, then execs the real git. */
export function gitWrapper(dir: string, realGit: string, counter: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${counter}'\nexec '${realGit}' "$@"\n`, {
    mode: 0o755,
  });
  return dir;
}

/** Git identity and config isolated from the user's (as the demo and the tests do). */
export function isolatedBenchGitEnv(root: string): NodeJS.ProcessEnv {
  return isolatedGitEnv(root, "State Flow Bench");
}

export async function openBenchSession(options: OpenOptions): Promise<BenchSession> {
  const { mode, agentDir, dirs } = options;
  let accessor: RuntimeAccessor | undefined;
  const stateFlow = createStateFlowExtension({
    agentDir,
    repositoryRoot: dirs.storeRoot,
    env: options.env,
    onRuntime: (a) => (accessor = a),
  });
  const sessionManager = options.sessionFile
    ? SessionManager.open(options.sessionFile, dirs.sessionDir)
    : SessionManager.create(dirs.cwd, dirs.sessionDir);
  const t0 = performance.now();
  const created = await createOfflineSession({
    cwd: dirs.cwd,
    agentDir,
    modelsStorePath: join(dirs.sessionDir, "..", "models.json"),
    modelId: "bench-model",
    extensionFactories: mode === "native" ? [] : [options.timed ? timedExtension(stateFlow) : stateFlow],
    sessionManager,
  });
  if (created.loadErrors.length > 0) throw new Error(`extension load failed: ${created.loadErrors.join("; ")}`);
  const createMs = performance.now() - t0;
  const notices: BenchSession["notices"] = [];
  const session = created.session;
  const ui = new Proxy(
    {
      notify: (message: string, level = "info") => notices.push({ message, level }),
      setStatus: () => undefined,
    } as Record<string, unknown>,
    { get: (target, key) => target[key as string] ?? (() => undefined) },
  );
  const t1 = performance.now();
  await session.bindExtensions({
    uiContext: ui as never,
    onError: (error: unknown) =>
      notices.push({
        message: `extension error: ${String((error as { error?: unknown }).error ?? error)}`,
        level: "error",
      }),
    commandContextActions: offlineCommandActions(session),
  });
  const bindMs = performance.now() - t1;
  if (mode !== "native" && !accessor) throw new Error("State Flow did not load");
  return { createMs, bindMs, session, faux: created.faux, accessor, notices };
}
