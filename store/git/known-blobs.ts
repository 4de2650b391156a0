// The blobs of the cohort a Git backend committed last, kept beside the repository in
// `<git-common-dir>/state-flow/known-blobs.json`, so that a new process (a resume) verifies the live
// files against HEAD without asking git, as the process that published does. It is a cache: written
// without fsync, used only while HEAD names its revision, and ignored when it cannot be read.

import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface KnownBlobs {
  readonly revision: string;
  /** Each member's blob id at that revision (null: the revision does not have the file). */
  readonly blobs: ReadonlyMap<string, string | null>;
}

const OBJECT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
const FILE = join("state-flow", "known-blobs.json");

/** The cache, or null when there is none or it is not exactly the documented shape. */
export async function readKnownBlobs(commonDir: string): Promise<KnownBlobs | null> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(join(commonDir, FILE), "utf8"));
  } catch {
    return null;
  }
  const record = value as { version?: unknown; revision?: unknown; blobs?: unknown } | null;
  if (record?.version !== 1 || typeof record.revision !== "string" || !OBJECT_ID.test(record.revision)) return null;
  if (typeof record.blobs !== "object" || record.blobs === null || Array.isArray(record.blobs)) return null;
  const blobs = new Map<string, string | null>();
  for (const [path, blob] of Object.entries(record.blobs as Record<string, unknown>)) {
    if (blob !== null && (typeof blob !== "string" || !OBJECT_ID.test(blob))) return null;
    blobs.set(path, blob);
  }
  return { revision: record.revision, blobs };
}

/**
 * Replaces the cache (temp file and rename, so a reader never sees half of it); failures are
 * ignored. Synchronous calls, as for the publication's other small files: it is written at the
 * end of every Git publication, where three thread-pool round trips cost more than the writes.
 */
export function writeKnownBlobs(commonDir: string, known: KnownBlobs): void {
  const path = join(commonDir, FILE);
  const temp = `${path}.${process.pid}.tmp`;
  const body = { version: 1, revision: known.revision, blobs: Object.fromEntries(known.blobs) };
  try {
    mkdirSync(join(commonDir, "state-flow"), { recursive: true });
    writeFileSync(temp, `${JSON.stringify(body)}\n`);
    renameSync(temp, path);
  } catch {
    // A cache that could not be written only costs the next process one git cat-file.
  }
}
