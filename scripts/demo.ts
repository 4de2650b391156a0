// `npm run demo [-- --keep]`: State Flow in a real, offline Pi session (see demo-session.ts).
//
// The npm script starts Node with --experimental-strip-types, which cannot load TypeScript
// parameter properties (used by the Pi adapter's classes). This entry therefore re-executes
// itself once with --experimental-transform-types and only then imports the demo.

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const TRANSFORM = "--experimental-transform-types";

if (!process.execArgv.includes(TRANSFORM)) {
  const child = spawnSync(
    process.execPath,
    [TRANSFORM, "--disable-warning=ExperimentalWarning", fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  process.exit(child.status ?? 1);
} else {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== "--keep");
  if (unknown.length > 0) {
    console.error(`usage: npm run demo [-- --keep]   (unknown: ${unknown.join(" ")})`);
    process.exit(2);
  }
  // Exit normally (so the demo's exit hook removes its temp dir) on Ctrl-C or a closed pipe (`| head`).
  process.on("SIGINT", () => process.exit(130));
  process.stdout.on("error", () => process.exit(0));
  const { runDemo } = await import("./demo-session.ts");
  try {
    await runDemo({ keep: args.includes("--keep") });
  } catch (error) {
    console.error(`\nState Flow demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  }
}
