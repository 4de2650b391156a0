// npm run machines: writes docs/machines/<machine>.mmd from the machines and embeds each diagram
// into docs/state-machines.md between its markers. tests/adapters/diagram/*.test.ts fail when the
// committed files differ from what the machines generate.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { machineCatalog } from "../machines/catalog.ts";
import { renderMermaid } from "../adapters/diagram/mermaid.ts";
import { embedDiagram } from "../adapters/diagram/docs.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const docPath = join(root, "docs", "state-machines.md");
mkdirSync(join(root, "docs", "machines"), { recursive: true });
let doc = readFileSync(docPath, "utf8");
for (const { name, machine } of machineCatalog) {
  const mermaid = renderMermaid(machine);
  writeFileSync(join(root, "docs", "machines", `${name}.mmd`), mermaid);
  doc = embedDiagram(doc, name, mermaid);
  console.log(`docs/machines/${name}.mmd`);
}
writeFileSync(docPath, doc);
console.log("docs/state-machines.md updated");
