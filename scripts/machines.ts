// npm run machines: writes docs/machines/<machine>.mmd from the machines and embeds each diagram,
// transition table and state list into docs/state-machines.md between its markers. `--check` writes
// nothing and exits 1 naming every file that differs from what the machines generate
// (tests/adapters/diagram/*.test.ts check the committed files the same way). `--root <dir>` works
// on another checkout's docs/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  driftedPaths,
  generatedDocs,
  MissingMarkerError,
  MissingStatesMarkerError,
  MissingTableMarkerError,
} from "../adapters/diagram/docs.ts";
import { MissingDescriptionError, renderStateList } from "../adapters/diagram/state-list.ts";
import { renderMermaid } from "../adapters/diagram/mermaid.ts";
import { renderTransitionTable } from "../adapters/diagram/transition-table.ts";
import { machineCatalog } from "../machines/catalog.ts";

const args = process.argv.slice(2);
const check = args.includes("--check");
const rootIndex = args.indexOf("--root");
const root = rootIndex >= 0 ? resolve(args[rootIndex + 1] ?? ".") : join(dirname(fileURLToPath(import.meta.url)), "..");
const docPath = join(root, "docs", "state-machines.md");

let generated: Map<string, string>;
try {
  generated = generatedDocs(
    readFileSync(docPath, "utf8"),
    machineCatalog.map(({ name, machine }) => ({
      name,
      mermaid: renderMermaid(machine),
      table: renderTransitionTable(machine),
      states: renderStateList(machine),
    })),
  );
} catch (error) {
  // A doc without a machine's markers is the author's to fix: say which, without a stack trace.
  const known = [MissingMarkerError, MissingTableMarkerError, MissingStatesMarkerError, MissingDescriptionError];
  if (!known.some((kind) => error instanceof kind)) throw error;
  if (!(error instanceof Error)) throw error;
  console.error(error.message);
  process.exit(1);
}
const outputs = new Map([...generated].map(([path, text]) => [join(root, path), text]));

if (check) {
  const drifted = driftedPaths(outputs, (path) => (existsSync(path) ? readFileSync(path, "utf8") : null));
  if (drifted.length > 0) {
    const list = drifted.join("\n  ");
    console.error(`diagrams or transition tables differ from the machines; run npm run machines:\n  ${list}`);
    process.exit(1);
  }
  console.log("diagrams and transition tables are up to date");
} else {
  mkdirSync(join(root, "docs", "machines"), { recursive: true });
  for (const [path, text] of outputs) {
    writeFileSync(path, text);
    console.log(path.slice(root.length + 1));
  }
}
