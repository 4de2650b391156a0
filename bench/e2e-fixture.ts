// What `npm run bench` (bench/e2e.ts) runs on: the seeded state, the input files the model reads,
// the script of each run per workload, and the sizes of a store on disk.
//
// Workloads (one run = one user prompt):
//   bench  read one 4 KiB file → a state write → the answer (3 inferences; the timed workload);
//   qa     a short question answered at once: no tool call natively (1 inference); State Flow's
//          protocol needs `patch_state {final:true}` before the answer (2 inferences);
//   heavy  ten reads of 8 KiB files, one per inference → a state write → the answer (12 inferences).
// The state write is Pi's own `edit` of a state file of the same size (native) or
// `patch_state {session…, final:true}` (State Flow); both replace one note.

import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { CostWorkload, Mode } from "./e2e-config.ts";
import type { Run } from "./cost-model.ts";

export type Workload = "bench" | CostWorkload;

export const READ_BYTES = 4096;
export const INPUT_FILES = 10;
export const HEAVY_READ_BYTES = 8192;
export const HEAVY_READS = 10;
/** One note or fact: `"n000":"<240 chars>",` is 250 bytes of state JSON. */
export const NOTE_CHARS = 240;
export const ENTRY_BYTES = 250;

export const noteKey = (prefix: string, k: number) => `${prefix}${String(k).padStart(3, "0")}`;
export function noteText(kind: string, k: number, run: number): string {
  const head = `${kind} ${k} as of run ${run}: `;
  const filler = "the verified observation, its source and the exact continuation of the work; ";
  return (head + filler.repeat(Math.ceil(NOTE_CHARS / filler.length))).slice(0, NOTE_CHARS);
}
export const stateLine = (key: string, text: string) => `- ${key}: ${text}`;

export interface Seed {
  facts: Record<string, string>;
  notes: Record<string, string>;
  count: number;
}

/** Half the state in the cwd contract (stable), half in session notes (one replaced per run). */
export function seedState(sizeKiB: number): Seed {
  const count = Math.max(1, Math.floor((sizeKiB * 1024) / 2 / ENTRY_BYTES));
  const facts: Record<string, string> = {};
  const notes: Record<string, string> = {};
  for (let k = 0; k < count; k++) {
    facts[noteKey("f", k)] = noteText("fact", k, 0);
    notes[noteKey("n", k)] = noteText("note", k, 0);
  }
  return { facts, notes, count };
}

/** Native's state file: the same facts and notes as markdown lines. */
export function nativeStateFile(seed: Seed): string {
  const lines = [
    "# State",
    ...Object.entries(seed.facts).map(([k, v]) => stateLine(k, v)),
    ...Object.entries(seed.notes).map(([k, v]) => stateLine(k, v)),
  ];
  return `${lines.join("\n")}\n`;
}

const inputText = (j: number, bytes: number) => {
  const line = `input ${j}: a line of the file the model reads in this run, as a coding agent would. `;
  return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
};
export const inputPath = (j: number) => `data/input-${j}.txt`;
export const heavyPath = (j: number) => `data/heavy-${j}.txt`;

/** The files the runs read: `data/input-<j>.txt` (4 KiB) and `data/heavy-<j>.txt` (8 KiB). */
export function writeInputs(cwd: string): void {
  mkdirSync(join(cwd, "data"), { recursive: true });
  for (let j = 0; j < INPUT_FILES; j++) writeFileSync(join(cwd, inputPath(j)), inputText(j, READ_BYTES));
  for (let j = 0; j < HEAVY_READS; j++) writeFileSync(join(cwd, heavyPath(j)), inputText(j, HEAVY_READ_BYTES));
}

export interface ScriptedCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

export interface RunScript {
  readonly prompt: string;
  /** The tool calls in order, one inference each; then the answer (one more inference). */
  readonly calls: readonly ScriptedCall[];
  readonly answer: string;
  /** The note this run replaces (absent for qa): index, key and new text. */
  readonly note?: { readonly k: number; readonly key: string; readonly text: string };
}

/** The script of run `run` of a workload; `notes` are the current note texts (native's edit needs the old line). */
export function runScript(
  workload: Workload,
  mode: Mode,
  run: number,
  seed: Seed,
  notes: readonly string[],
): RunScript {
  if (workload === "qa")
    return {
      prompt: `Question ${run}: in one sentence, what does the cache of this project keep between runs?`,
      // State Flow accepts an answer only after a final:true patch (alone when nothing changed);
      // without it, it steers the model back for one, which costs more than the patch.
      calls: mode === "native" ? [] : [{ name: "patch_state", args: { final: true } }],
      answer: `Answer ${run}: it keeps the verified observations of earlier runs and where each came from.`,
    };
  const k = (run - 1) % seed.count;
  const key = noteKey("n", k);
  const text = noteText("note", k, run);
  const write: ScriptedCall =
    mode === "native"
      ? {
          name: "edit",
          args: { path: "state.md", edits: [{ oldText: stateLine(key, notes[k]!), newText: stateLine(key, text) }] },
        }
      : {
          name: "patch_state",
          args: { session: { working: { notes: { [key]: text }, status: `run ${run}` } }, final: true },
        };
  const answer = `Run ${run}: recorded ${key}.`;
  if (workload === "heavy") {
    const reads = Array.from({ length: HEAVY_READS }, (_, j) => ({ name: "read", args: { path: heavyPath(j) } }));
    return {
      prompt: `Run ${run}: read data/heavy-0.txt to data/heavy-${HEAVY_READS - 1}.txt, then record ${key}.`,
      calls: [...reads, write],
      answer,
      note: { k, key, text },
    };
  }
  const input = inputPath(run % INPUT_FILES);
  return {
    prompt: `Run ${run}: read ${input}, then record ${key}.`,
    calls: [{ name: "read", args: { path: input } }, write],
    answer,
    note: { k, key, text },
  };
}

/** Every file below `root` outside `.git`, with its bytes. */
export function storeFiles(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  if (!existsSync(root)) return files;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(root, path);
    if (!entry.isFile() || rel === ".git" || rel.startsWith(`.git/`)) continue;
    files.set(rel, readFileSync(path));
  }
  return files;
}

export function dirBytes(root: string): number {
  if (!existsSync(root)) return 0;
  let total = 0;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) total += readFileSync(join(entry.parentPath, entry.name)).length;
  return total;
}

/** `add -A`, `cat-file --batch-check`, `rev-parse` …: a git command line without its long arguments. */
export function gitCommand(line: string): string {
  const words = line.split(" ");
  let i = 0;
  while (words[i] === "-c") i += 2;
  const name = words[i] ?? "?";
  const flag = words[i + 1];
  return flag && flag.startsWith("-") && !flag.includes("=") ? `${name} ${flag}` : name;
}

/** The state sizes (KiB) each extra workload runs at; `bench` runs at BENCH_SIZES. 0.5 KiB is "tiny". */
export const COST_SIZES: Record<Exclude<Workload, "bench">, readonly number[]> = { qa: [0.5, 8], heavy: [8] };

/** One workload at one state size: native's and State Flow's runs, each a list of requests' elements. */
export interface CostCase {
  readonly workload: Workload;
  readonly sizeKiB: number;
  readonly native: readonly Run[];
  readonly stateFlow: readonly Run[];
}
