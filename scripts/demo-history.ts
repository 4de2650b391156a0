// The demo's history section: after the scripted runs, what a person can look back at and branch from —
// /state-flow-history of the session scope, /state-flow-show of an older boundary, /state-flow-diff from
// that boundary to now — and a fork at that boundary, opened as a second session in the same agent dir
// and store. The fork is Pi's own (`createBranchedSession` at the checkpoint entry that recorded the
// boundary, as Pi's /fork and /state-flow-fork do): the offline binding cancels `ctx.fork`, since it drives
// one session, so the demo makes the same new session file itself and opens it. It shows that the fork
// starts with the parent's session state at that point, patches its own, and leaves the parent's alone.

import { SessionManager, type AgentSession } from "@earendil-works/pi-coding-agent";
import { checkpointEntryOf } from "../adapters/pi/branch.ts";
import { scriptedSteps } from "../adapters/pi/offline-session.ts";
import { compact, openDemoSession, trimState, type DemoDirs, type DemoDriver, type Recorder } from "./demo-driver.ts";

const { say, call } = scriptedSteps("demo-fork");

/** The boundary the section looks back to: this many boundaries before now. */
export const LOOK_BACK = 4;

/** The session scope's state at a boundary, without empty fields, on one line. */
function sessionState(d: DemoDriver, offset = 0): string {
  return compact(trimState(d.sf.read(offset, "session").state as never), 150);
}

/** A section heading in the demo's `── title ──` style. */
function heading(d: DemoDriver, title: string): void {
  d.out("");
  d.out(`── ${title} ${"─".repeat(Math.max(4, 76 - title.length))}`);
}

/** Runs the section; the fork's session goes to `onSession` as soon as it exists (the caller disposes it). */
export async function showHistoryAndFork(
  d: DemoDriver,
  dirs: DemoDirs,
  env: NodeJS.ProcessEnv,
  rec: Recorder,
  onSession: (session: AgentSession) => void,
): Promise<DemoDriver> {
  await d.command("/state-flow-history session", { after: false });
  await d.command(`/state-flow-show session ${LOOK_BACK}`, { after: false });
  await d.command(`/state-flow-diff ${LOOK_BACK} 0 session`, { after: false });

  // The checkpoint entry that recorded the boundary diffed from: the fork point /state-flow-fork would pick.
  const boundary = d.sf.read(LOOK_BACK, "session").boundary;
  const manager = d.session.sessionManager;
  const entry = checkpointEntryOf(manager.getBranch(), manager.getEntries(), boundary.id);
  if (!entry) throw new Error(`no checkpoint entry recorded boundary step ${boundary.step} (${boundary.id})`);
  const data = (entry as { data?: { revision?: string } }).data;
  heading(d, `a fork at offset ${LOOK_BACK} (step ${boundary.step})`);
  d.out(`  This is what Pi's /fork at its checkpoint entry and /state-flow-fork ${LOOK_BACK} do. This offline session`);
  d.out("  cannot switch sessions, so the demo calls what they call — Pi's SessionManager.createBranchedSession");
  d.out("  at that entry — and opens the new session file beside the parent, in the same agent dir and store.");
  d.out(
    `  checkpoint entry ${entry.id} (custom, state-flow): revision ${data?.revision?.slice(0, 7)}, ` +
      `boundary step ${boundary.step} ${boundary.id.slice(0, 10)}`,
  );
  const forkFile = SessionManager.open(d.session.sessionFile!, dirs.sessionDir).createBranchedSession(entry.id);
  if (!forkFile) throw new Error("Pi wrote no session file for the fork");
  const parentBefore = sessionState(d);
  const fork = await openDemoSession(dirs, env, rec, onSession, forkFile);
  fork.trace();
  fork.runNumber = d.runNumber;
  const copied = sessionState(fork);
  const isAtFork = copied === sessionState(d, LOOK_BACK) ? "= the parent's at the fork" : "≠ the parent's at the fork";
  const isNewest = copied === parentBefore ? "= its newest" : "not its newest";
  fork.out(`  fork's session state:   ${isAtFork} (step ${boundary.step}), ${isNewest}: ${copied}`);

  await fork.run(
    "in the fork: its own session patch",
    "Here, try another next step instead: a --json flag.",
    call("patch_state", { session: { working: { task: "--json flag", status: "planned" } }, final: true }),
    say("In this fork the next step is `todo list --json`."),
  );
  fork.out(`  fork's session state:   ${sessionState(fork)}`);
  const parentAfter = sessionState(d);
  d.out(`  parent's session state: ${parentAfter === parentBefore ? "unchanged" : "CHANGED"}: ${parentAfter}`);
  return fork;
}
