// CPU profile of a batch of runs (bench/e2e.ts), taken in-process through node:inspector so that
// only the measured runs are sampled (not Pi's start-up, the setup runs or the token accounting),
// and summarized by file:function — self time (where the CPU was) and inclusive time (what a
// product function costs with everything it calls), plus a split by owner (State Flow's folders,
// Pi's packages, xstate, valibot, Node's internals, GC, idle). Idle is wall time the main thread
// waited: for git processes, fsyncs and timers.

import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled wall time (ms) and the runs it covers. */
  totalMs: number;
  runs: number;
  /** ms per run by owner (State Flow folder, Pi package, library, node, gc, idle). */
  byOwner: Record<string, number>;
  /** Top functions by self time, ms per run. */
  self: { fn: string; msPerRun: number; percent: number }[];
  /** Top State Flow functions by inclusive time (callees included), ms per run. */
  inclusive: { fn: string; msPerRun: number; percent: number }[];
  file: string;
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));

function shortUrl(url: string): string {
  if (url === "") return "";
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (pkg) return `${pkg[1]}/${pkg[2]!.replace(/^dist\/(bundle\/)?/, "")}`;
  return path.startsWith(ROOT) ? relative(ROOT, path) : path;
}

function ownerOf(frame: CallFrame): string {
  const name = frame.functionName;
  if (frame.url === "") {
    if (name === "(garbage collector)") return "gc";
    if (name === "(idle)") return "idle (waiting: git, fsync, timers)";
    if (name === "(program)") return "program (native, unattributed)";
    return "node native bindings (fs, crypto, …)";
  }
  const url = shortUrl(frame.url);
  if (url.startsWith("@earendil-works/")) return `Pi: ${url.split("/")[1]}`;
  if (url.startsWith("node:") || url.startsWith("internal")) return "node internals";
  const pkg = /^((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (frame.url.includes("node_modules") && pkg) return `lib: ${pkg[1]}`;
  const top = url.split("/")[0]!;
  if (["machines", "runtime", "adapters", "storage"].includes(top)) {
    const parts = url.split("/");
    return `State Flow: ${parts.slice(0, parts.length > 2 ? 2 : 1).join("/")}`;
  }
  return url.startsWith("bench/") ? "bench (harness)" : `other: ${url}`;
}

function fnKey(frame: CallFrame): string {
  if (frame.url === "")
    return frame.functionName.startsWith("(") ? frame.functionName : `(native) ${frame.functionName}`;
  return `${shortUrl(frame.url)}:${frame.functionName || "(anonymous)"}:${frame.lineNumber + 1}`;
}

const isProduct = (frame: CallFrame) => ownerOf(frame).startsWith("State Flow");

export function summarizeProfile(profile: CpuProfile, runs: number, file: string, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // A sample's node ran until the next sample (DevTools' attribution).
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + delta);
  }
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const perRun = (us: number) => Math.round((us / 1000 / runs) * 1000) / 1000;
  const percent = (us: number) => Math.round((us / totalUs) * 1000) / 10;

  const owners = new Map<string, number>();
  const selfByFn = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    owners.set(ownerOf(frame), (owners.get(ownerOf(frame)) ?? 0) + us);
    selfByFn.set(fnKey(frame), (selfByFn.get(fnKey(frame)) ?? 0) + us);
  }

  // Inclusive time per product function; a function on the stack twice (recursion) counts once.
  const inclusive = new Map<string, number>();
  const onStack = new Map<string, number>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const subtree = new Map<number, number>();
  const order: number[] = [];
  const root = profile.nodes[0]!.id;
  const stack = [root];
  while (stack.length > 0) {
    const id = stack.pop()!;
    order.push(id);
    for (const child of byId.get(id)!.children ?? []) stack.push(child);
  }
  for (const id of [...order].reverse()) {
    let us = selfUs.get(id) ?? 0;
    for (const child of byId.get(id)!.children ?? []) us += subtree.get(child) ?? 0;
    subtree.set(id, us);
  }
  const visit = (id: number) => {
    const node = byId.get(id)!;
    const key = isProduct(node.callFrame) ? fnKey(node.callFrame) : null;
    if (key) {
      if ((onStack.get(key) ?? 0) === 0) inclusive.set(key, (inclusive.get(key) ?? 0) + subtree.get(id)!);
      onStack.set(key, (onStack.get(key) ?? 0) + 1);
    }
    for (const child of node.children ?? []) visit(child);
    if (key) onStack.set(key, onStack.get(key)! - 1);
  };
  visit(root);

  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([fn, us]) => ({ fn, msPerRun: perRun(us), percent: percent(us) }));
  return {
    totalMs: Math.round(totalUs / 1000),
    runs,
    byOwner: Object.fromEntries([...owners].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, perRun(us)])),
    self: rank(selfByFn),
    inclusive: rank(inclusive),
    file,
  };
}

/** Starts sampling (every 200 µs); the returned stop() ends it and writes the .cpuprofile (DevTools opens it). */
export async function startProfiler(file: string): Promise<() => Promise<CpuProfile>> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: CpuProfile };
    session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
    return profile;
  };
}

/** Samples `work` and writes its profile to `file`. */
export async function profiled(file: string, work: () => Promise<void>): Promise<CpuProfile> {
  const stop = await startProfiler(file);
  try {
    await work();
  } catch (error) {
    await stop();
    throw error;
  }
  return stop();
}
