// Every TypeScript line is at most 120 characters. Prettier (checked by npm run validate) wraps
// code at that width but cannot break string literals or comments; this names what it leaves.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const MAX_LINE = 120;

/** `file:line (length)` for every line longer than MAX_LINE characters (code points, not bytes). */
function longLines(file: string, text: string): string[] {
  return text.split("\n").flatMap((line, i) => {
    const length = [...line].length;
    return length > MAX_LINE ? [`${file}:${i + 1} (${length})`] : [];
  });
}

describe("line length", () => {
  const files = execFileSync("git", ["ls-files", "*.ts", "*.mjs"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);

  it("finds the tracked sources", () => {
    expect(files).toContain("runtime/flow-runtime.ts");
  });

  it(`keeps every line of every tracked .ts/.mjs file within ${MAX_LINE} characters`, () => {
    const long = files.flatMap((file) => longLines(file, readFileSync(join(ROOT, file), "utf8")));
    expect(long).toEqual([]);
  });

  it("counts characters, not bytes, and names the offending line", () => {
    expect(longLines("a.ts", `${"→".repeat(MAX_LINE)}\nx`)).toEqual([]);
    expect(longLines("a.ts", `ok\n${"x".repeat(MAX_LINE + 1)}`)).toEqual([`a.ts:2 (${MAX_LINE + 1})`]);
  });
});
