// Which form of State Flow Pi loads: the build in dist/ (scripts/build.mjs, which `npm ci` runs) or the
// TypeScript sources. The build is used only while no source it holds is newer than it, so a checkout
// edited or pulled since its build runs what it holds — its sources, through Pi's own compiler, as
// without a build. What was chosen, and why, is said in /state-flow-status.

import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export interface PackageForm {
  /** The build's entry module as a file URL; null: load the sources. */
  readonly build: string | null;
  /** For /state-flow-status: which form, and why. */
  readonly said: string;
}

const MANIFEST = "dist/state-flow.json";

/** `root`: the package's folder. STATE_FLOW_SOURCES=1 asks for the sources whatever the build. */
export function packageForm(root: string, env: NodeJS.ProcessEnv = process.env): PackageForm {
  const sources = (why: string): PackageForm => ({ build: null, said: `its TypeScript sources: ${why}` });
  const rebuild = `\`npm run build\` in ${root} makes Pi's start faster`;
  if (env.STATE_FLOW_SOURCES === "1") return sources("STATE_FLOW_SOURCES=1 asks for them");
  let manifest: { entry?: unknown; sources?: unknown };
  try {
    manifest = JSON.parse(readFileSync(join(root, MANIFEST), "utf8")) as typeof manifest;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    return sources(`${missing ? "no build in dist/" : `${MANIFEST} cannot be read (${String(error)})`}; ${rebuild}`);
  }
  const { entry, sources: files } = manifest;
  if (typeof entry !== "string" || !Array.isArray(files) || !files.every((f) => typeof f === "string"))
    return sources(`${MANIFEST} is not a build manifest; ${rebuild}`);
  const entryPath = join(root, "dist", entry);
  let builtAt: number;
  try {
    builtAt = statSync(entryPath).mtimeMs;
  } catch {
    return sources(`dist/${entry} is missing; ${rebuild}`);
  }
  for (const file of files as string[]) {
    let changed: number;
    try {
      changed = statSync(join(root, file)).mtimeMs;
    } catch {
      return sources(`${file}, built into dist/, is gone; ${rebuild}`);
    }
    if (changed > builtAt) return sources(`${file} changed after the build in dist/; ${rebuild}`);
  }
  const when = new Date(builtAt).toISOString().replace(/\.\d+Z$/, "Z");
  return { build: pathToFileURL(entryPath).href, said: `the build in dist/ (from ${files.length} files, ${when})` };
}
