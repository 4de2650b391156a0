// The durable record of what a session owes the store's remote: the accepted commit its
// publication still has to push (with the failed attempts and the last error), or, once nothing
// is owed, the commit that settled it. One JSON file per session in the repository's git dir
// (`<git-common-dir>/state-flow/pending/<session-key>.json`): never part of a cohort, never
// committed, shared by every worktree. Written atomically (temp, fsync, rename) whenever the
// intent changes, so a restart knows exactly what is still owed.

import { readOwnedFile, writeOwnedFileAtomic } from "../fs/fs-safe.ts";
import { StoreError } from "../store-error.ts";

export type PendingRecord =
  /** `revision` is owed; `attempts` failed pushes so far (0: queued, not yet attempted). */
  | { readonly state: "pending"; readonly revision: string; readonly attempts: number; readonly lastError?: string }
  /** Nothing is owed: pushed, superseded by a pushed descendant, or kept local by the policy. */
  | { readonly state: "settled"; readonly revision: string };

const relPath = (sessionKey: string) => `state-flow/pending/${sessionKey}.json`;
const REVISION = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

function parse(value: unknown): PendingRecord | null {
  const record = value as Record<string, unknown> | null;
  if (typeof record !== "object" || record === null || typeof record.revision !== "string") return null;
  if (!REVISION.test(record.revision)) return null;
  if (record.state === "settled") return { state: "settled", revision: record.revision };
  if (record.state !== "pending" || !Number.isSafeInteger(record.attempts) || (record.attempts as number) < 0)
    return null;
  if (record.lastError !== undefined && typeof record.lastError !== "string") return null;
  return {
    state: "pending",
    revision: record.revision,
    attempts: record.attempts as number,
    ...(record.lastError === undefined ? {} : { lastError: record.lastError }),
  };
}

/** The session's record; null when it has none (a session of an older version, or none yet). */
export async function readPendingRecord(commonDir: string, sessionKey: string): Promise<PendingRecord | null> {
  const bytes = await readOwnedFile(commonDir, relPath(sessionKey));
  if (bytes === null) return null;
  let value: unknown = null;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    // reported below, as any other malformed record
  }
  const record = parse(value);
  if (record) return record;
  throw new StoreError(
    "invalid-pending-record",
    `The pending-publication record ${relPath(sessionKey)} in ${commonDir} is neither ` +
      `{"state":"pending","revision","attempts","lastError"?} nor {"state":"settled","revision"}; nothing was ` +
      "pushed for it. Delete the file: the session then reconciles its selected revision with the remote, " +
      "and its next accepted cohort writes the record again.",
    { file: relPath(sessionKey) },
  );
}

export async function writePendingRecord(commonDir: string, sessionKey: string, record: PendingRecord): Promise<void> {
  await writeOwnedFileAtomic(commonDir, relPath(sessionKey), Buffer.from(`${JSON.stringify(record)}\n`));
}
