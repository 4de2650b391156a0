// The blobs of the cohort a Git backend committed last (KnownBlobCache, below), also kept beside the
// repository in `<git-common-dir>/state-flow/known-blobs.json`, so that a new process (a resume)
// verifies the live files against HEAD without asking git, as the process that published does. It is a cache: written
// without fsync, used only while HEAD names its revision, and ignored when it cannot be read.

import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { gitObjectId } from "./plumbing/git-objects.ts";

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

/**
 * What one backend knows of the blobs at a revision: the cohort it committed last, or the live
 * files it verified against a revision, and on first use what another process left (above).
 * While the branch still names that revision, reads of those members need no git.
 */
export class KnownBlobCache {
  private readonly commonDir: string;
  private readonly objectFormat: "sha1" | "sha256";
  private known: KnownBlobs | undefined;
  private loaded = false;

  constructor(commonDir: string, objectFormat: "sha1" | "sha256") {
    this.commonDir = commonDir;
    this.objectFormat = objectFormat;
  }

  /** Forgets what was known: a verification failed, so git decides from here on. */
  forget(): void {
    this.known = undefined;
  }

  /** The blobs of the cohort just committed, kept here and for the next process. */
  committed(revision: string, blobs: ReadonlyMap<string, string | null>): void {
    this.known = { revision, blobs };
    writeKnownBlobs(this.commonDir, this.known);
  }

  /**
   * Live files just verified equal to `revision`'s blobs (each member's blob id, null: absent):
   * later reads of that revision need no git.
   */
  remember(revision: string, verified: ReadonlyMap<string, string | null>): void {
    const blobs = new Map(this.known?.revision === revision ? this.known.blobs : []);
    for (const [path, blob] of verified) blobs.set(path, blob);
    this.known = { revision, blobs };
  }

  /**
   * HEAD's blob of each member in `git cat-file --batch-check`'s output format when `head` is the
   * known revision and every member is known; else null.
   */
  async listingAt(head: string | null, members: readonly string[]): Promise<string | null> {
    if (!this.loaded) {
      this.loaded = true;
      this.known ??= (await readKnownBlobs(this.commonDir)) ?? undefined;
    }
    const known = this.known;
    if (head === null || known?.revision !== head || !members.every((path) => known.blobs.has(path))) return null;
    const lines = members.map((path) => {
      const blob = known.blobs.get(path)!;
      return blob === null ? `HEAD:${path} missing` : `${blob} blob`;
    });
    return `${head} commit\n${lines.join("\n")}\n`;
  }

  /**
   * The live files when `revision` is the known one and they still have exactly its blobs (read
   * with `readLive`, which may refuse); else null.
   */
  async liveFilesAt(
    revision: string,
    members: readonly string[],
    readLive: () => Promise<Map<string, Buffer | null>>,
  ): Promise<Map<string, Buffer | null> | null> {
    const known = this.known;
    if (known?.revision !== revision || !members.every((path) => known.blobs.has(path))) return null;
    const files = await readLive().catch(() => null);
    if (files === null) return null;
    return members.every((path) => this.blobOf(files.get(path) ?? null) === known.blobs.get(path)) ? files : null;
  }

  private blobOf(bytes: Buffer | null): string | null {
    return bytes === null ? null : gitObjectId("blob", bytes, this.objectFormat);
  }
}
