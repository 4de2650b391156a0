// npm run bench:knowledge — Knowledge discovery of 5,000 Markdown files (nested, 2 KiB each) as a
// ratio to a plain directory walk + hash of the same files measured in the same run: Node's
// recursive readdir, then readFile + sha256 of every `.md` file, one after another. Iterations are
// interleaved (discovery, then baseline) so both see the same machine load; figures are medians.
// Prints a table and ends with one line `BENCH {json}`. Never asserts timings.

import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { discoverKnowledge } from "../runtime/knowledge-discovery.ts";

const FILES = 5000;
const PER_DIR = 100;
const BYTES = 2048;
const ITERATIONS = 9;
const WARMUP = 2;

const work = mkdtempSync(join(tmpdir(), "sf-bench-knowledge-"));
const root = join(work, "knowledge");
for (let i = 0; i < FILES; i++) {
  const dir = join(root, `topic-${Math.floor(i / PER_DIR)}`, i % 2 === 0 ? "" : "nested");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `note-${i}.md`), `# note ${i}\n${"x".repeat(BYTES - 12)}\n`);
}

function plainWalkAndHash(): number {
  let count = 0;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".md")) continue;
    createHash("sha256")
      .update(readFileSync(join(entry.parentPath, entry.name)))
      .digest("hex");
    count++;
  }
  return count;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const discovery: number[] = [];
const baseline: number[] = [];
let found = 0;
try {
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    let t = performance.now();
    found = (await discoverKnowledge(root)).sources.length;
    const d = performance.now() - t;
    t = performance.now();
    const walked = plainWalkAndHash();
    const b = performance.now() - t;
    if (walked !== found) throw new Error(`discovery found ${found} files, the plain walk ${walked}`);
    if (i >= WARMUP) {
      discovery.push(d);
      baseline.push(b);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const result = {
  files: found,
  bytesPerFile: BYTES,
  iterations: ITERATIONS,
  discoveryMs: Number(median(discovery).toFixed(1)),
  plainWalkHashMs: Number(median(baseline).toFixed(1)),
  ratio: Number((median(discovery) / median(baseline)).toFixed(2)),
  target: 1.5,
};
console.log(`Knowledge discovery of ${found} files × ${BYTES} B (median of ${ITERATIONS}, interleaved)`);
console.log(`  discoverKnowledge         ${result.discoveryMs} ms`);
console.log(`  plain walk + sha256       ${result.plainWalkHashMs} ms`);
console.log(`  ratio                     ${result.ratio}× (target ≤ ${result.target}×)`);
console.log(`BENCH ${JSON.stringify(result)}`);
