// Git attributes that keep the store's own files byte-exact for every git command run in the
// store repository, the user's own included. `$GIT_COMMON_DIR/info/attributes` outranks every
// .gitattributes and core.attributesFile, so a user's `*.json text eol=lf` or `filter=…` still
// applies to their own files but never converts, filters or re-encodes State Flow's: a user's
// `git commit -a` then commits the same bytes State Flow would, and the next load is not
// mistaken for a hand edit. `-merge` makes a user's `git pull` or `git merge` stop with a conflict on
// a store file both sides changed instead of merging its lines: two lineages' patch records joined
// line by line would read as one history that never happened (State Flow joins lines scope by scope
// itself, git-sync.ts). The block is added once, under the publication lock (an earlier block is
// replaced), and a user's own lines in that file are kept as they are.

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CHECKPOINT_FILE, CONFIG_FILE, META_FILE, PATCHES_FILE } from "../core/codec.ts";
import { errnoOf } from "../store-error.ts";

const BEGIN = "# state-flow: its store files are committed byte-exact (no eol conversion, filter or encoding)";
const UNSET = "-text -eol -filter -ident -working-tree-encoding";
const block = (begin: string, unset: string) =>
  [begin, ...[CHECKPOINT_FILE, PATCHES_FILE, META_FILE, CONFIG_FILE].map((f) => `${f} ${unset}`)]
    .map((line) => `${line}\n`)
    .join("");

/** The lines State Flow keeps in info/attributes. */
export const STORE_ATTRIBUTES = block(
  "# state-flow: its store files are committed byte-exact and never line-merged by git",
  `${UNSET} -merge`,
);
/** The block an earlier version wrote (replaced where found). */
const EARLIER_ATTRIBUTES = block(BEGIN, UNSET);

/** `existing` with State Flow's block appended (or an earlier one replaced), or null when it already holds it. */
export function withStoreAttributes(existing: string | null): string | null {
  if (existing?.includes(STORE_ATTRIBUTES)) return null;
  if (existing?.includes(EARLIER_ATTRIBUTES)) return existing.replace(EARLIER_ATTRIBUTES, STORE_ATTRIBUTES);
  const prefix = existing === null || existing === "" ? "" : existing.endsWith("\n") ? existing : `${existing}\n`;
  return `${prefix}${STORE_ATTRIBUTES}`;
}

/** Makes sure `<commonDir>/info/attributes` holds the block; true when it had to be written. */
export async function ensureStoreAttributes(commonDir: string): Promise<boolean> {
  const dir = join(commonDir, "info");
  const path = join(dir, "attributes");
  const existing = await readFile(path, "utf8").catch((error: unknown) => {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  });
  const next = withStoreAttributes(existing);
  if (next === null) return false;
  await mkdir(dir, { recursive: true });
  const temp = `${path}.state-flow-${process.pid}.tmp`;
  await writeFile(temp, next, { mode: 0o644 });
  await rename(temp, path);
  return true;
}
