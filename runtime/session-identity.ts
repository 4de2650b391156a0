// Which store paths a session owns: its cwd key and session key, derived from what the host knows
// about the session (Pi: the session manager's file, header and id).

import { cwdKey, sessionKeyFromFile, sessionKeyFromHeader } from "../storage/layout.ts";
import type { SessionIdentity } from "../storage/state-store.ts";

export type { SessionIdentity };

export interface SessionSource {
  getSessionFile(): string | undefined;
  getHeader(): { readonly id: string; readonly timestamp: string } | null;
  getSessionId(): string;
}

export function sessionIdentity(cwd: string, session: SessionSource): SessionIdentity {
  const file = session.getSessionFile();
  const sessionKey = file ? sessionKeyFromFile(file) : sessionKeyFromHeader(session.getHeader()!);
  return { cwd, cwdKey: cwdKey(cwd), sessionId: session.getSessionId(), sessionKey };
}
