// A remote that really blocks: an ssh command (GIT_SSH_COMMAND or core.sshCommand) that answers
// OpenSSH's variant probe (`-G`) like ssh, then, for the real connection, appends one line to a
// marker file — its pid, the prompt variables it got and its arguments — and sleeps for an hour
// without ever answering. Tests read the marker to know the remote was contacted and whether the
// process that blocks is still alive; `killLeft` is the safety net that ends any still running.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Contact {
  readonly pid: number;
  readonly terminalPrompt: string;
  readonly gcmInteractive: string;
  readonly args: string;
}

export interface BlockingSsh {
  /** The script's path: the ssh command to configure. */
  readonly command: string;
  /** Every connection made so far, oldest first. */
  contacts(): Contact[];
  /** Kills every contacted process still alive (test cleanup). */
  killLeft(): void;
}

/** A URL git reaches through the ssh command (scp-like syntax); the host name never resolves. */
export const BLOCKED_URL = "blocked.invalid:state.git";

export function blockingSsh(dir: string): BlockingSsh {
  const command = join(dir, "blocking-ssh");
  const marker = join(dir, "contacts");
  writeFileSync(marker, "");
  writeFileSync(
    command,
    "#!/bin/sh\n" +
      'for a in "$@"; do [ "$a" = -G ] && exit 0; done\n' +
      `printf '%s\\t%s\\t%s\\t%s\\n' "$$" "$GIT_TERMINAL_PROMPT" "$GCM_INTERACTIVE" "$*" >> '${marker}'\n` +
      "exec sleep 3600\n",
    { mode: 0o755 },
  );
  const contacts = () =>
    readFileSync(marker, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => {
        const [pid, terminalPrompt, gcmInteractive, args] = line.split("\t");
        return { pid: Number(pid), terminalPrompt: terminalPrompt!, gcmInteractive: gcmInteractive!, args: args! };
      });
  return {
    command,
    contacts,
    killLeft: () => {
      for (const { pid } of contacts()) if (alive(pid)) process.kill(pid, "SIGKILL");
    },
  };
}

/** Whether `pid` is a running process (a zombie nobody reaped yet counts as ended). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Waits until `done()` holds, checking every 25 ms; fails naming `what` after `tries` checks (no timing asserted). */
export async function until(done: () => boolean, what: string, tries = 800): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}
