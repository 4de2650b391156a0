import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Diagnostics, diagnosticsPath } from "../../runtime/diagnostics.ts";

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "sf-diag-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o755);
    rmSync(d, { recursive: true, force: true });
  }
});

describe("Diagnostics", () => {
  it("writes JSONL under <agentDir>/tmp/state-flow only when enabled", () => {
    const agent = temp();
    new Diagnostics(agent, false, join(agent, "state-flow"), () => {}).write({ kind: "rejected-patch" });
    expect(() => readFileSync(diagnosticsPath(agent))).toThrow();
    const on = new Diagnostics(agent, true, join(agent, "state-flow"), () => {});
    on.write({ kind: "rejected-patch", error: "x" });
    on.write({ kind: "unresolved-draft", text: "y" });
    const lines = readFileSync(on.path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.kind)).toEqual(["rejected-patch", "unresolved-draft"]);
    expect(lines[0].time).toMatch(/^\d{4}-/);
  });

  it("refuses to log inside the state store and warns once", () => {
    const agent = temp();
    const warnings: string[] = [];
    const d = new Diagnostics(agent, true, agent, (m) => warnings.push(m));
    d.write({ kind: "rejected-patch" });
    d.write({ kind: "rejected-patch" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/lies inside the state store/);
  });

  it("a write failure changes nothing but one warning", () => {
    const agent = temp();
    mkdirSync(join(agent, "tmp"), { recursive: true });
    writeFileSync(join(agent, "tmp", "state-flow"), "a file where the folder should be");
    const warnings: string[] = [];
    const d = new Diagnostics(agent, true, join(agent, "store"), (m) => warnings.push(m));
    d.write({ kind: "unresolved-draft" });
    d.write({ kind: "unresolved-draft" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/could not be written/);
  });
});
