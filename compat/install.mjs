// Installs compat/pi-1.6 (Pi 1.6.0 beside the project's Pi 0.84.4) with `npm ci`, once per
// version of its lock file: `npm run test:pi-1.6` calls it, so the README's test command works on
// a fresh clone without a second install step. A stamp in its node_modules records the lock it
// installed; a changed lock or a missing install runs `npm ci` again.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const folder = fileURLToPath(new URL("./pi-1.6/", import.meta.url));
const stamp = join(folder, "node_modules", ".state-flow-lock");
const lock = createHash("sha256").update(readFileSync(join(folder, "package-lock.json"))).digest("hex");

if (existsSync(stamp) && readFileSync(stamp, "utf8") === lock) process.exit(0);
console.log("installing Pi 1.6.0 into compat/pi-1.6 (npm ci) …");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const result = spawnSync(npm, ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: folder, stdio: "inherit" });
if (result.status !== 0) {
  console.error(`npm ci in ${folder} failed (exit ${result.status ?? result.signal}); the Pi 1.6 tests cannot run.`);
  process.exit(1);
}
writeFileSync(stamp, lock);
