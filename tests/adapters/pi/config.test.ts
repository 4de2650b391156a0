import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StateFlowConfigError, loadConfig, resolveDirectory } from "../../../adapters/pi/config.ts";

let agentDir: string;
beforeEach(() => {
  agentDir = mkdtempSync(join(tmpdir(), "sf-config-"));
});
afterEach(() => rmSync(agentDir, { recursive: true, force: true }));

const write = (value: unknown) =>
  writeFileSync(join(agentDir, "state-flow.json"), typeof value === "string" ? value : JSON.stringify(value));

function failure(): string {
  try {
    loadConfig(agentDir, "/home/u");
  } catch (error) {
    expect(error).toBeInstanceOf(StateFlowConfigError);
    return (error as Error).message;
  }
  throw new Error("expected loading to fail");
}

describe("loadConfig", () => {
  it("uses defaults when the file is absent and does not create it", () => {
    expect(loadConfig(agentDir)).toEqual({
      directory: join(agentDir, "state-flow"),
      autoStart: false,
      logging: false,
      remotePublication: "turn-end",
      source: null,
    });
  });

  it("reads every setting", () => {
    write({ directory: "/srv/flow", autoStart: true, logging: true, remotePublication: "off" });
    expect(loadConfig(agentDir)).toMatchObject({
      directory: "/srv/flow",
      autoStart: true,
      logging: true,
      remotePublication: "off",
    });
  });

  it("resolves a relative directory from the configuration folder and expands ~", () => {
    write({ directory: "stores/flow" });
    expect(loadConfig(agentDir).directory).toBe(join(agentDir, "stores/flow"));
    write({ directory: "~/flow" });
    expect(loadConfig(agentDir, "/home/u").directory).toBe("/home/u/flow");
    expect(resolveDirectory("~", "/x", "/home/u")).toBe("/home/u");
  });

  it("fails on unknown keys, naming file, key and value and the fix", () => {
    write({ autostart: true });
    expect(failure()).toBe(
      `${join(agentDir, "state-flow.json")}: "autostart" = true is not a known setting ` +
        "(known: directory, autoStart, logging, remotePublication); correct the key's spelling, or remove it",
    );
  });

  it("fails on bad values, naming key and value and the fix", () => {
    const fix = "; correct the value, or remove the key to use its default";
    write({ remotePublication: "always" });
    expect(failure()).toMatch(/"remotePublication" = "always" must be one of "off", "turn-end", "transition"; /);
    write({ autoStart: "yes" });
    expect(failure()).toBe(`${join(agentDir, "state-flow.json")}: "autoStart" = "yes" must be true or false${fix}`);
    write({ directory: "" });
    expect(failure()).toMatch(/"directory" = "" must not be empty; correct the value/);
  });

  it("fails on invalid JSON and non-object documents, in one line naming the file and the fix", () => {
    const file = join(agentDir, "state-flow.json");
    write('{ "autoStart": tru\n');
    const invalid = failure();
    expect(invalid.startsWith(`${file}: invalid JSON (`)).toBe(true);
    expect(invalid.endsWith("); fix the file or remove it to use defaults")).toBe(true);
    expect(invalid).not.toContain("\n");
    write("[]");
    expect(failure()).toBe(
      `${file}: must be a JSON object such as {"autoStart": false}; fix the file or remove it to use defaults`,
    );
  });

  it("fails on a file it cannot read, naming it and the fix", () => {
    mkdirSync(join(agentDir, "state-flow.json"));
    expect(failure()).toMatch(/state-flow\.json: cannot be read \(.*EISDIR.*\); fix its permissions or remove it$/);
  });
});
