// Which Pi the tests run against. `npm test` uses the project's Pi 0.84.4; `npm run test:pi-1.6`
// sets STATE_FLOW_PI=1.6, and vitest.config.ts then resolves Pi's packages from compat/pi-1.6.
// Child processes (the real `pi` CLI, the demo) need the same choice made explicitly.

import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { VERSION } from "@earendil-works/pi-coding-agent";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const compat = process.env.STATE_FLOW_PI === "1.6" ? join(repoRoot, "compat/pi-1.6") : null;

/** The Pi version this test process loaded. */
export const PI_VERSION: string = VERSION;

/** The pi-coding-agent package folder whose `pi` binary the CLI tests spawn. */
export const piPackageDir = join(compat ?? repoRoot, "node_modules/@earendil-works/pi-coding-agent");

/** Node flags that make a child `node scripts/….ts` resolve the same Pi. */
export const piNodeArgs: readonly string[] = compat ? ["--import", join(compat, "register.mjs")] : [];
