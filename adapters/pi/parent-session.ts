// The session a Pi session was forked from. Pi's `/fork`, `pi --fork` and an extension's `ctx.fork`
// write the parent's session file into the new header (`parentSession`) and copy the parent's entries,
// State Flow's checkpoints among them, before the header's timestamp. State Flow reads the parent's
// identity from that file's own header (its id and cwd name the parent's session folder in the store).

import { closeSync, openSync, readSync } from "node:fs";
import type { SessionIdentity } from "../../runtime/session-identity.ts";
import { cwdKey, sessionKeyFromFile } from "../../storage/layout.ts";

/** What a session header says about forking (Pi's SessionHeader). */
export interface ForkHeader {
  readonly timestamp: string;
  readonly parentSession?: string;
}

/** The parent's identity, from its session file's header line; null when there is none or it cannot be read. */
export function parentIdentity(header: ForkHeader | null): SessionIdentity | null {
  const file = header?.parentSession;
  if (!file) return null;
  try {
    const parent = JSON.parse(firstLine(file)) as { type?: unknown; id?: unknown; cwd?: unknown };
    if (parent.type !== "session" || typeof parent.id !== "string" || typeof parent.cwd !== "string") return null;
    return { cwd: parent.cwd, cwdKey: cwdKey(parent.cwd), sessionId: parent.id, sessionKey: sessionKeyFromFile(file) };
  } catch {
    return null; // the parent's file is gone or not Pi's: nothing to copy from
  }
}

/** When Pi forked this session (entries before it were copied from the parent); undefined: not a fork. */
export function forkedAt(header: ForkHeader | null): string | undefined {
  return header?.parentSession ? header.timestamp : undefined;
}

/** The header line only: a session file can be megabytes long. */
function firstLine(file: string): string {
  const fd = openSync(file, "r");
  try {
    const chunks: Buffer[] = [];
    const buffer = Buffer.alloc(4096);
    for (let total = 0; total < 1 << 20;) {
      const read = readSync(fd, buffer, 0, buffer.length, total);
      if (read === 0) break;
      const end = buffer.subarray(0, read).indexOf(10);
      chunks.push(Buffer.from(buffer.subarray(0, end < 0 ? read : end)));
      if (end >= 0) break;
      total += read;
    }
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
