import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// STATE_FLOW_PI=1.6 runs the tests against the Pi 1.6.0 installed in compat/pi-1.6 (npm run test:pi-1.6):
// Pi's four packages then resolve from that folder, and their own dependencies from beside them.
const piFolder = process.env.STATE_FLOW_PI === "1.6" ? "./compat/pi-1.6/node_modules/@earendil-works/" : null;
// (a deep import such as pi-ai's `api/*` names its file: the alias of a whole folder skips the package's exports)
const piAlias = piFolder
  ? [
      {
        find: /^@earendil-works\/pi-ai\/api\/(.*)$/,
        replacement: fileURLToPath(new URL(`${piFolder}pi-ai/dist/api/$1.js`, import.meta.url)),
      },
      ...["pi-coding-agent", "pi-ai", "pi-agent-core", "pi-tui"].map((name) => ({
        find: `@earendil-works/${name}`,
        replacement: fileURLToPath(new URL(`${piFolder}${name}`, import.meta.url)),
      })),
    ]
  : [];

export default defineConfig({
  resolve: { alias: piAlias },
  test: {
    include: ["tests/**/*.test.ts"],
    // (two workers share two cores: a generated-path suite can take twice as long as it does alone)
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Vitest's default is one worker fewer than the cores: a single worker on CI's two. Most files wait on
    // git and Pi child processes rather than compute, so two workers keep both cores busy.
    maxWorkers: 2,
  },
});
