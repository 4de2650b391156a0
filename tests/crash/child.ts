// One process of the crash matrix (tests/crash/crash-matrix.test.ts). It opens a real file-backed
// Pi AgentSession (faux model, no network) on a root shared by the whole chain, recovers from the
// previous process's SIGKILL only through the steps State Flow's own messages name, reports what
// it finds, then keeps publishing runs until STATE_FLOW_KILL_AT kills it (or it runs out of runs).
// It is a separate OS process because only a real SIGKILL shows what a crash leaves on disk.
//
//   node --experimental-strip-types tests/crash/child.ts --root <dir> --mode git|file
//     [--session <file>] --report <jsonl> --confirmations <jsonl> --max-runs <n> --label <text>
//     [--arm <point>#<n>]   (armed only after the report and one unarmed, verified run)
//
// Exit codes: 0 all runs done (the armed point, if any, was not reached); 3 a patch was refused;
// 4 an answer was not committed as session.response; 1 the child itself failed. Killed at the
// armed point: signal SIGKILL.

import { appendFileSync, rmSync } from "node:fs";
import type { AssistantMessage, Context } from "@earendil-works/pi-ai";
import { PiHarness, call, say, type Notice } from "../support/pi-harness.ts";

interface Args {
  root: string;
  mode: "git" | "file";
  session: string | undefined;
  report: string;
  confirmations: string;
  maxRuns: number;
  label: string;
  /** `<point>#<n>`, armed only after the recovery report and one verified run. */
  arm: string | undefined;
}

interface ScopeReport {
  n: number | null;
  response: string | null;
  error?: string;
}

const SCOPES = ["global", "cwd", "session"] as const;
// More than one documented step is already a finding; a few more show where it would lead.
const MAX_RECOVERY_STEPS = 4;
const RETRY_STEP = "/state-flow-start (as the notice says)";

function parseArgs(argv: string[]): Args {
  const value = (name: string): string | undefined => {
    const index = argv.indexOf(`--${name}`);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const required = (name: string): string => {
    const found = value(name);
    if (found === undefined) throw new Error(`child.ts: --${name} is required`);
    return found;
  };
  const mode = required("mode");
  if (mode !== "git" && mode !== "file") throw new Error(`child.ts: --mode must be git or file, not ${mode}`);
  return {
    root: required("root"),
    mode,
    session: value("session") || undefined,
    report: required("report"),
    confirmations: required("confirmations"),
    maxRuns: Number(required("max-runs")),
    label: value("label") ?? "",
    arm: value("arm") || undefined,
  };
}

function appendLine(file: string, value: unknown): void {
  // appendFileSync: the line must be on disk before the next write step can kill us.
  appendFileSync(file, `${JSON.stringify(value)}\n`);
}

function lastToolResultText(context: Context): string {
  for (let i = context.messages.length - 1; i >= 0; i -= 1) {
    const message = context.messages[i] as { role: string; content: unknown };
    if (message.role !== "toolResult") continue;
    const blocks = Array.isArray(message.content) ? (message.content as { text?: string }[]) : [];
    return blocks.map((block) => block.text ?? "").join("");
  }
  return "(no tool result in the context)";
}

type RunOutcome = "accepted" | "refused" | "uncommitted";

/**
 * One run j: patch all three scopes with final:true, confirm the tool result, answer. An answer
 * that did not become session.response is recorded with the notices of the run: otherwise it
 * would only show up later as a response that does not match n.
 */
async function run(h: PiHarness, args: Args, j: number): Promise<RunOutcome> {
  let accepted = false;
  const noticesBefore = h.notices.length;
  const working = { working: { n: j } };
  const patch = { global: working, cwd: working, session: working, final: true };
  h.script(call("patch_state", patch), (context: Context): AssistantMessage => {
    // This step runs only once Pi handed the model the tool result: from here on it counts.
    const text = lastToolResultText(context);
    accepted = text.startsWith("Accepted");
    const line = accepted ? { confirmed: j, label: args.label } : { refused: j, text, label: args.label };
    appendLine(args.confirmations, line);
    return say(`answer ${j}`)();
  });
  appendLine(args.confirmations, { attempt: j, label: args.label });
  await h.prompt(`run ${j}`);
  if (!accepted) return "refused";
  const { response, error } = readScope(h, "session");
  if (response === `answer ${j}`) {
    appendLine(args.confirmations, { responded: j, label: args.label });
    return "accepted";
  }
  const notices = h.notices.slice(noticesBefore);
  appendLine(args.confirmations, { uncommitted: j, response, error, notices, label: args.label });
  return "uncommitted";
}

/** The lock file a notice names when it says that lock's owner is gone. */
function deadLockPath(notice: Notice): string | null {
  if (!/no longer running/.test(notice.message)) return null;
  // Only a file with the lock's own name is ever deleted, whatever a changed message might name.
  // (`<store>/.git/state-flow-publication.lock`, or `<store>/.state-flow-publication.lock` without Git)
  return /publication lock (\S+\/\.?state-flow-publication\.lock) is held by/.exec(notice.message)?.[1] ?? null;
}

/**
 * Follows State Flow's own messages (README Troubleshooting): a lock whose owner "is no longer
 * running" is deleted and /state-flow-start retried; a restore that hit the lock is retried with
 * /state-flow-start, as its notice says. Every step is recorded; the test judges how many were needed.
 */
async function recover(h: PiHarness): Promise<string[]> {
  const steps: string[] = [];
  let seen = 0;
  while (steps.length < MAX_RECOVERY_STEPS) {
    const fresh = h.notices.slice(seen);
    seen = h.notices.length;
    const lock = fresh.map(deadLockPath).find((path) => path !== null);
    if (lock) {
      rmSync(lock, { force: true });
      steps.push(`rm ${lock}`);
      await h.command("/state-flow-start");
      steps.push("/state-flow-start");
      continue;
    }
    // Once: when the retry only repeats the notice, the notice gives nothing more to do.
    const retried = steps.includes(RETRY_STEP);
    if (!retried && fresh.some((notice) => /retry \/state-flow-start/.test(notice.message))) {
      await h.command("/state-flow-start");
      steps.push(RETRY_STEP);
      continue;
    }
    break;
  }
  return steps;
}

function readScope(h: PiHarness, scope: (typeof SCOPES)[number]): ScopeReport {
  try {
    const state = h.accessor.read(0, scope).state as { working?: { n?: unknown }; response?: unknown };
    const n = typeof state.working?.n === "number" ? state.working.n : null;
    return { n, response: typeof state.response === "string" ? state.response : null };
  } catch (error) {
    return { n: null, response: null, error: error instanceof Error ? error.message : String(error) };
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // Only `root` of shareWith is used: the chain's processes share agent dir, cwd, sessions and store.
  const h = await PiHarness.create({
    shareWith: { root: args.root } as PiHarness,
    git: args.mode === "git",
    sessionKind: "file",
    openFile: args.session,
  });
  const startupMs = Math.round(process.uptime() * 1000);
  const restoreNotices = h.notices.map((notice) => ({ ...notice }));
  let steps: string[] = [];
  let firstRun = 1;
  if (args.session === undefined) {
    // Setup: Pi writes the session file only after the first assistant message, so one full run.
    await h.command("/state-flow-start");
    const outcome = await run(h, args, 1);
    if (outcome !== "accepted") throw new Error(`setup run ${outcome}: ${JSON.stringify(h.notices)}`);
    firstRun = 2;
  } else {
    steps = await recover(h);
  }
  const scopes = Object.fromEntries(SCOPES.map((scope) => [scope, readScope(h, scope)])) as Record<string, ScopeReport>;
  appendLine(args.report, {
    label: args.label,
    pid: process.pid,
    sessionFile: h.session.sessionManager.getSessionFile(),
    startupMs,
    episode: h.accessor.episode(),
    scopes,
    restoreNotices,
    notices: h.notices,
    recoverySteps: steps,
    loadErrors: h.loadErrors,
  });
  const n = scopes.session?.n ?? 0;
  let start = args.session === undefined ? firstRun : n + 1;
  const proceed = async (j: number) => {
    const outcome = await run(h, args, j);
    if (outcome !== "accepted") process.exit(outcome === "refused" ? 3 : 4);
  };
  if (args.session !== undefined) {
    // Unarmed: after a kill, every scope must patch again before this process may be killed.
    await proceed(start);
    start += 1;
  }
  if (args.arm) process.env.STATE_FLOW_KILL_AT = args.arm;
  for (let j = start; j < start + args.maxRuns; j += 1) await proceed(j);
  process.exit(0);
}

main().catch((error: unknown) => {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`crash child failed: ${text}\n`);
  process.exit(1);
});
