// What a mutant of `npm run mutate:machines` is, how one is applied, and how one run is judged
// (a private copy of the repository, the owning suite run there): shared by the script and by the
// modules that hold its mutant lists, so each list lives apart from the machinery.
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

export interface Mutant {
  id: string;
  /** Repository-relative path of the source the replacement applies to. */
  file: string;
  /** Text that occurs exactly once in `file`. */
  from: string;
  to: string;
  /** The mistake this stands for (what a reviewer would worry about). */
  why: string;
  /**
   * The test files or folders that own this mutant (repository-relative, as vitest takes them): run
   * alone in the mutant's copy, one of their tests must fail. Default: DEFAULT_SUITE.
   */
  suite?: readonly string[];
}

/** The suite of a mutant that names none: the generated machine suites. */
export const DEFAULT_SUITE: readonly string[] = ["tests/machines"];

export const suiteOf = (mutant: Mutant): readonly string[] => mutant.suite ?? DEFAULT_SUITE;

export function occurrences(text: string, needle: string): number {
  if (needle === "") return 0;
  let count = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) count++;
  return count;
}

/** The mutated source; throws unless `from` occurs exactly once and `to` differs from it. */
export function applyMutant(source: string, mutant: Mutant): string {
  const count = occurrences(source, mutant.from);
  if (count !== 1) throw new Error(`${mutant.id}: "from" occurs ${count} times in ${mutant.file}, expected once`);
  if (mutant.to === mutant.from) throw new Error(`${mutant.id}: "to" equals "from"`);
  return source.replace(mutant.from, () => mutant.to);
}

/** Copied into each mutant's directory: everything the suites and the config import. */
const COPIED = [
  "machines",
  "storage",
  "runtime",
  "adapters",
  "tests",
  "scripts",
  "package.json",
  "tsconfig.json",
  "vitest.config.ts",
  "index.ts",
  "skills",
];
export const PARALLEL = 2;
const TIMEOUT_MS = 420_000;

type Verdict = "caught" | "survived" | "error";
export interface Outcome {
  id: string;
  verdict: Verdict;
  /** Failing tests, each with the invariant ids its failure names. */
  by: string[];
  seconds: number;
  detail?: string;
}

interface JsonReport {
  testResults?: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults?: Array<{ fullName: string; status: string; failureMessages?: string[] }>;
  }>;
}

/** A runnable copy of `source`'s files, with `repo`'s packages. */
export function copyRepo(source: string, repo: string, id: string): string {
  const dir = mkdtempSync(join(tmpdir(), `sf-mutant-${id}-`));
  for (const entry of COPIED) {
    const from = join(source, entry);
    if (existsSync(from)) cpSync(from, join(dir, entry), { recursive: true });
  }
  // Packages are linked one by one into a private node_modules: vitest writes its cache under
  // node_modules/.vite, which must not be the shared checkout's while other runs use it.
  mkdirSync(join(dir, "node_modules"));
  for (const entry of readdirSync(join(repo, "node_modules"))) {
    if (entry !== ".vite") symlinkSync(join(repo, "node_modules", entry), join(dir, "node_modules", entry));
  }
  return dir;
}

function runVitest(
  dir: string,
  report: string,
  suite: readonly string[],
): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  return new Promise((done) => {
    // The project's Node (this process) runs vitest, whatever `node` the PATH would pick.
    const args = [join(dir, "node_modules/.bin/vitest"), "run", ...suite];
    const child = spawn(process.execPath, [...args, "--reporter=json", `--outputFile=${report}`], {
      cwd: dir,
      env: { ...process.env, CI: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => void (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => void (output += d.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, output, timedOut });
    });
  });
}

function invariantIds(messages: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const m of messages) for (const id of m.match(/\bI\d+\.\d+\b/g) ?? []) ids.add(id);
  return [...ids].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
}

/** One run: a mutant on its suite, or (mutant null) the unmutated copy on `suite`. */
export interface Job {
  mutant: Mutant | null;
  suite: readonly string[];
}

export async function judge(snapshot: string, repo: string, { mutant, suite }: Job): Promise<Outcome> {
  const id = mutant?.id ?? `baseline of ${suite.join(" ")}`;
  const started = Date.now();
  const dir = copyRepo(snapshot, repo, mutant?.id ?? "baseline");
  try {
    if (mutant) {
      const path = join(dir, mutant.file);
      writeFileSync(path, applyMutant(readFileSync(path, "utf8"), mutant));
    }
    const reportPath = join(dir, "vitest-report.json");
    const { code, output, timedOut } = await runVitest(dir, reportPath, suite);
    const seconds = (Date.now() - started) / 1000;
    const tail = output.trim().split("\n").slice(-15).join("\n");
    if (timedOut) return { id, verdict: "error", by: [], seconds, detail: `timed out after ${TIMEOUT_MS / 1000} s` };
    if (!existsSync(reportPath))
      return { id, verdict: "error", by: [], seconds, detail: `no report (exit ${code})\n${tail}` };
    const report = JSON.parse(readFileSync(reportPath, "utf8")) as JsonReport;
    const files = report.testResults ?? [];
    // A file that fails without any failed test did not load: the mutant broke the build, which
    // says nothing about the invariants.
    const broken = files.filter(
      (f) => f.status === "failed" && !(f.assertionResults ?? []).some((a) => a.status === "failed"),
    );
    if (broken.length > 0) {
      const what = broken.map((f) => `${basename(f.name)}: ${(f.message ?? "").split("\n")[0]}`).join("; ");
      return { id, verdict: "error", by: [], seconds, detail: `test file failed to run: ${what}` };
    }
    const by: string[] = [];
    for (const f of files) {
      for (const a of f.assertionResults ?? []) {
        if (a.status !== "failed") continue;
        const ids = invariantIds(a.failureMessages ?? []);
        by.push(`${basename(f.name)} › ${a.fullName}${ids.length ? ` [${ids.join(", ")}]` : ""}`);
      }
    }
    if (code === 0 && by.length === 0) return { id, verdict: "survived", by, seconds };
    if (by.length > 0) return { id, verdict: "caught", by, seconds };
    return { id, verdict: "error", by, seconds, detail: `vitest exited ${code} without a failed test\n${tail}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function pool<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}
