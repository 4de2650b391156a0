// Git attributes that keep the store's own files byte-exact for every git command run in the
// store repository, the user's own included. `$GIT_COMMON_DIR/info/attributes` outranks every
// .gitattributes and core.attributesFile, so a user's `*.json text eol=lf` or `filter=…` still
// applies to their own files but never converts, filters or re-encodes State Flow's: a user's
// `git commit -a` then commits the same bytes State Flow would, and the next load is not
// mistaken for a hand edit. The block is added once, under the publication lock, and a user's
// own lines in that file are kept as they are.

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CHECKPOINT_FILE, CONFIG_FILE, META_FILE, PATCHES_FILE } from "../core/codec.ts";
import { errnoOf } from "../store-error.ts";

const BEGIN = "# state-flow: its store files are committed byte-exact (no eol conversion, filter or encoding)";
const UNSET = "-text -eol -filter -ident -working-tree-encoding";

/** The lines State Flow keeps in info/attributes. */
export const STORE_ATTRIBUTES = [
  BEGIN,
  ...[CHECKPOINT_FILE, PATCHES_FILE, META_FILE, CONFIG_FILE].map((f) => `${f} ${UNSET}`),
]
  .map((line) => `${line}\n`)
  .join("");

/** `existing` with State Flow's block appended, or null when it already holds it. */
export function withStoreAttributes(existing: string | null): string | null {
  if (existing?.includes(STORE_ATTRIBUTES)) return null;
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
