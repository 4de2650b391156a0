// npm run build (and npm's `prepare`, so `npm ci` or `npm install` in a checkout runs it): State Flow's
// TypeScript as one JavaScript module graph in dist/, which adapters/pi/state-flow.ts hands to Node instead of
// Pi's per-file compiler (jiti): the package's share of Pi's start. Pi's packages stay out of the build:
// State Flow's modules import only their types (the values come in through adapters/pi/pi-host.ts).
// dist/state-flow.json names every source the build holds; the entry uses the build only while none of
// them is newer than it.
//
// Plain JavaScript, so any Node runs it: where rolldown (a dev dependency) is not installed, the build
// is skipped with one line and Pi loads the sources, as without a build.

import { existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const MANIFEST = "state-flow.json";
// Loaded by Node from node_modules when asked for (both are imported lazily): everything else the
// sources use — xstate, valibot, @valibot/to-json-schema — is built in, in its ESM form (Node would
// load xstate's CommonJS build behind an ESM wrapper, parsing it twice).
const LOADED_FROM_NODE_MODULES = /^(node:|simple-git$|@statelyai\/inspect$)/;

/**
 * Builds the package at `root` into `root`/dist; returns the manifest it wrote. Throws, naming the
 * import, where a module imports Pi at run time. `input` (relative to `root`) is for tests.
 */
export async function buildPackage({ root = ROOT, input = "adapters/pi/extension.ts" } = {}) {
  const { build } = await import("rolldown");
  const out = join(root, "dist");
  const previous = readManifest(out);
  // Gone first, so an interrupted build leaves no manifest and the entry loads the sources.
  rmSync(join(out, MANIFEST), { force: true });
  const result = await build({
    input: { "state-flow": join(root, input) },
    platform: "node",
    logLevel: "warn",
    external(id) {
      if (id.startsWith("@earendil-works/"))
        throw new Error(`a module imports ${id} at run time: take the value from PiHost (adapters/pi/pi-host.ts)`);
      return LOADED_FROM_NODE_MODULES.test(id);
    },
    // Named by their content: Node keeps a module by its URL for the life of the process and /reload
    // loads the entry again, so a /reload after a build that changed anything loads new files.
    output: {
      dir: out,
      format: "esm",
      entryFileNames: "[name]-[hash].js",
      chunkFileNames: "state-flow-[name]-[hash].js",
    },
  });
  const sources = new Set();
  for (const chunk of result.output) {
    for (const id of chunk.moduleIds ?? []) {
      if (isAbsolute(id) && !id.includes("/node_modules/")) sources.add(relative(root, id));
    }
  }
  // The lock file names the versions of what is built in: a checkout whose dependencies changed since
  // (a pull; `npm ci` builds again) loads its sources until it is rebuilt.
  if (existsSync(join(root, "package-lock.json"))) sources.add("package-lock.json");
  const entry = result.output.find((chunk) => chunk.type === "chunk" && chunk.isEntry);
  if (!entry) throw new Error("the build wrote no entry module");
  const files = result.output.map((chunk) => chunk.fileName).sort();
  const manifest = { entry: entry.fileName, files, sources: [...sources].sort() };
  const tmp = join(out, `${MANIFEST}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(tmp, join(out, MANIFEST));
  // The previous build's files stay: a Pi started on it may still import one of its lazy parts.
  // Older ones go.
  const keep = new Set([MANIFEST, ...files, ...(previous?.files ?? [])]);
  for (const name of readdirSync(out)) if (!keep.has(name)) rmSync(join(out, name), { recursive: true, force: true });
  return manifest;
}

/** The manifest a build left in `out`, or null (none, or not readable). */
function readManifest(out) {
  try {
    const manifest = JSON.parse(readFileSync(join(out, MANIFEST), "utf8"));
    return Array.isArray(manifest?.files) ? manifest : null;
  } catch {
    return null;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let rolldownThere = true;
  try {
    await import("rolldown");
  } catch {
    rolldownThere = false;
  }
  if (!rolldownThere) {
    console.warn("state-flow: build skipped (rolldown, a dev dependency, is not installed); Pi loads the sources");
  } else {
    const started = performance.now();
    const manifest = await buildPackage();
    const size = statSync(join(ROOT, "dist", manifest.entry)).size;
    console.log(
      `state-flow: built dist/${manifest.entry} from ${manifest.sources.length} files ` +
        `(${Math.round(size / 1024)} KiB, ${Math.round(performance.now() - started)} ms)`,
    );
  }
}
