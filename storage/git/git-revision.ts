// A past revision's member files, read from git without touching the worktree: `git ls-tree` for
// the members' entries (regular files only) and one `git cat-file --batch` for their bytes (no
// output limit). Two git processes; a revision or object the repository lacks is `revision-missing`.

import { GitCommandError, gitFailed, type GitRunner } from "./git-runner.ts";
import { StoreError } from "../store-error.ts";

/** The bytes of each member at `revision` (null: the revision has no such file). */
export async function readRevisionFiles(
  runner: GitRunner,
  root: string,
  revision: string,
  members: readonly string[],
): Promise<Map<string, Buffer | null>> {
  let listing: string;
  try {
    listing = await runner.execText(["ls-tree", "-z", "-r", "--full-tree", `${revision}^{commit}`, "--", ...members]);
  } catch (error) {
    if (
      error instanceof GitCommandError &&
      /not a valid object|not a tree object|bad object|invalid object|Not a valid/i.test(error.stderr)
    ) {
      throw new StoreError(
        "revision-missing",
        `Revision ${revision} is not a commit in the state repository ${root}. ` +
          `Its history is unavailable here ` +
          `(a different storage root, a reset, or missing objects); ` +
          `select another checkpoint or restore the original repository.`,
        { cause: error },
      );
    }
    throw gitFailed(`Listing revision ${revision}`, error);
  }
  const entries = new Map<string, string>();
  for (const record of listing.split("\0")) {
    if (record === "") continue;
    const tab = record.indexOf("\t");
    const [mode, type, sha] = record.slice(0, tab).split(" ");
    const path = record.slice(tab + 1);
    if (type !== "blob" || (mode !== "100644" && mode !== "100755") || !sha) {
      throw new StoreError(
        "not-regular-object",
        `${path} at revision ${revision} is a ${type} with mode ${mode}, not a regular file; ` +
          `State Flow reads only regular-file Git objects.`,
        { file: path },
      );
    }
    entries.set(path, sha);
  }
  const files = new Map<string, Buffer | null>(members.map((p) => [p, null]));
  const wanted = members.filter((p) => entries.has(p));
  if (wanted.length > 0) {
    let raw: Buffer;
    try {
      raw = await runner.exec(["cat-file", "--batch"], {
        input: wanted.map((p) => `${entries.get(p)}\n`).join(""),
      });
    } catch (error) {
      throw gitFailed(`Reading objects of revision ${revision}`, error);
    }
    const blobs = parseCatFileBatch(raw);
    wanted.forEach((path, index) => {
      const blob = blobs[index];
      if (!blob || blob.sha !== entries.get(path)) {
        throw new StoreError(
          "revision-missing",
          `The object of ${path} at revision ${revision} is missing from the repository.`,
          { file: path },
        );
      }
      files.set(path, blob.bytes);
    });
  }
  return files;
}

/** Parses `git cat-file --batch` output into objects (missing entries yield undefined). */
export function parseCatFileBatch(raw: Buffer): Array<{ sha: string; type: string; bytes: Buffer } | undefined> {
  const objects: Array<{ sha: string; type: string; bytes: Buffer } | undefined> = [];
  let offset = 0;
  while (offset < raw.length) {
    const nl = raw.indexOf(0x0a, offset);
    if (nl < 0) throw new StoreError("git-failed", "Truncated git cat-file --batch output (header without newline).");
    const header = raw.subarray(offset, nl).toString("utf8");
    offset = nl + 1;
    if (header.endsWith(" missing") || header.endsWith(" ambiguous")) {
      objects.push(undefined);
      continue;
    }
    const [sha, type, sizeText] = header.split(" ");
    const size = Number(sizeText);
    if (!sha || !type || !Number.isSafeInteger(size) || offset + size + 1 > raw.length) {
      throw new StoreError(
        "git-failed",
        `Truncated or malformed git cat-file --batch output at ${JSON.stringify(header)}.`,
      );
    }
    objects.push({ sha, type, bytes: Buffer.from(raw.subarray(offset, offset + size)) });
    offset += size + 1; // content + LF
  }
  return objects;
}
