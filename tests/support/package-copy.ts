// A copy of the package as a checkout holds it (its sources, Skill, manifest; node_modules linked), for
// tests that build it or have Pi load it without touching this checkout's dist/.
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export function packageCopy(into: string): string {
  mkdirSync(into, { recursive: true });
  for (const part of [
    "adapters",
    "machines",
    "runtime",
    "storage",
    "scripts",
    "skills",
    "package.json",
    "package-lock.json",
    "index.ts",
  ])
    cpSync(join(repoRoot, part), join(into, part), { recursive: true });
  symlinkSync(join(repoRoot, "node_modules"), join(into, "node_modules"));
  return into;
}
