import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// STATE_FLOW_PI=1.6 runs the tests against the Pi 1.6.0 installed in compat/pi-1.6 (npm run test:pi-1.6):
// Pi's three packages then resolve from that folder, and their own dependencies from beside them.
const piFolder = process.env.STATE_FLOW_PI === "1.6" ? "./compat/pi-1.6/node_modules/@earendil-works/" : null;
const piAlias = piFolder
  ? Object.fromEntries(
      ["pi-coding-agent", "pi-ai", "pi-agent-core"].map((name) => [
        `@earendil-works/${name}`,
        fileURLToPath(new URL(`${piFolder}${name}`, import.meta.url)),
      ]),
    )
  : {};

export default defineConfig({
  resolve: { alias: piAlias },
  test: {
    include: ["tests/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
