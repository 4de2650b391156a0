// What Pi loads (package.json `pi.extensions`). Pi compiles an extension's TypeScript file by file at
// every start (jiti); State Flow's ≈ 110 modules cost most of its share of Pi's start that way. The
// same sources built into dist/ (scripts/build.mjs, run by `npm ci`) are one module graph Node loads
// itself. This entry loads the build while no source is newer (package-form.ts), else the sources,
// and gives either the values of the Pi that loaded it (pi-host.ts).

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as codingAgent from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { packageForm } from "./package-form.ts";
import { piHostOf } from "./pi-host.ts";

type Adapter = typeof import("./extension.ts");

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The adapter module in the form package-form.ts chose; a build that fails to load falls back to the sources. */
async function loadAdapter(): Promise<{ adapter: Adapter; said: string }> {
  const form = packageForm(ROOT);
  if (form.build) {
    try {
      return { adapter: (await import(form.build)) as Adapter, said: form.said };
    } catch (error) {
      const cause = String(error).split("\n")[0];
      const said =
        `its TypeScript sources: the build in dist/ failed to load (${cause}); ` +
        `\`npm run build\` in ${ROOT} rebuilds it`;
      return { adapter: await import("./extension.ts"), said };
    }
  }
  return { adapter: await import("./extension.ts"), said: form.said };
}

export default async function stateFlow(pi: ExtensionAPI): Promise<void> {
  const { adapter, said } = await loadAdapter();
  await adapter.stateFlowExtension(piHostOf(codingAgent, { Text }), { loadedFrom: said })(pi);
}
