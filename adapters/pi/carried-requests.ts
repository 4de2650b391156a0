// The interrupted requests a branch carries, as branch entries: after every State Flow run the
// requests the next prompt would carry (machines/specification.ts) are appended as a custom entry
// when they differ from the branch's newest record, and a session start or a /tree reads the
// newest record on the selected branch. So a request interrupted in one `pi -p` process is still
// carried by the next `pi -c`, and a /tree to a point before the interruption does not carry it.
// Custom entries never reach the model; the record is this physical session's (a fork starts clean).

import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { NOTHING_CARRIED, type CarriedRequests, type Request } from "../../machines/specification.ts";

/** customType of the entry recording the interrupted requests a branch carries. */
export const REQUESTS_ENTRY = "state-flow-requests";

export interface RequestsRecord extends CarriedRequests {
  sessionId: string;
}

function isRequest(value: unknown): value is Request {
  const r = value as Request | null;
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.request === "string" &&
    Array.isArray(r.added) &&
    r.added.every((text) => typeof text === "string")
  );
}

function parseRecord(data: unknown, sessionId: string): CarriedRequests | null {
  const record = data as Partial<RequestsRecord> | null;
  if (typeof record !== "object" || record === null || record.sessionId !== sessionId) return null;
  const { interrupted, dropped } = record;
  if (!Array.isArray(interrupted) || !interrupted.every(isRequest)) return null;
  if (typeof dropped !== "number" || !Number.isInteger(dropped) || dropped < 0) return null;
  return { interrupted, dropped };
}

/** The newest record of this session on the branch (none, or only unreadable ones: nothing carried). */
export function carriedOnBranch(entries: readonly SessionEntry[], sessionId: string): CarriedRequests {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type !== "custom" || entry.customType !== REQUESTS_ENTRY) continue;
    const carried = parseRecord(entry.data, sessionId);
    if (carried) return carried;
  }
  return NOTHING_CARRIED;
}

export function sameCarried(a: CarriedRequests, b: CarriedRequests): boolean {
  return a.dropped === b.dropped && JSON.stringify(a.interrupted) === JSON.stringify(b.interrupted);
}
