// npm run machines: writes docs/machines/<machine>.mmd from the machines and embeds each diagram
// into docs/state-machines.md between its markers. `--check` writes nothing and exits 1 naming
// every file that differs from what the machines generate (tests/adapters/diagram/*.test.ts
// check the committed files the same way). `--root <dir>` works on another checkout's docs/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generatedDocs } from "../adapters/diagram/docs.ts";
import { renderMermaid } from "../adapters/diagram/mermaid.ts";
import { machineCatalog } from "../machines/catalog.ts";

const args = process.argv.slice(2);
const check = args.includes("--check");
const rootIndex = args.indexOf("--root");
const root = rootIndex >= 0 ? resolve(args[rootIndex + 1] ?? ".") : join(dirname(fileURLToPath(import.meta.url)), "..");
const docPath = join(root, "docs", "state-machines.md");

const generated = generatedDocs(
  readFileSync(docPath, "utf8"),
  machineCatalog.map(({ name, machine }) => ({ name, mermaid: renderMermaid(machine) })),
);
const outputs = new Map([...generated].map(([path, text]) => [join(root, path), text]));

if (check) {
  const drifted = [...outputs].filter(([path, text]) => !existsSync(path) || readFileSync(path, "utf8") !== text).map(([path]) => path);
  if (drifted.length > 0) {
    console.error(`diagrams differ from the machines; run npm run machines:\n  ${drifted.join("\n  ")}`);
    process.exit(1);
  }
  console.log("diagrams are up to date");
} else {
  mkdirSync(join(root, "docs", "machines"), { recursive: true });
  for (const [path, text] of outputs) {
    writeFileSync(path, text);
    console.log(path.slice(root.length + 1));
  }
}
