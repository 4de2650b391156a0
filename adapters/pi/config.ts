// Agent-level configuration: `state-flow.json` in Pi's agent directory, read once at extension
// load. Strict on purpose: an unknown key or a bad value fails loading with the file, the key and
// the value named and the fix said, instead of silently choosing another store (the extension then
// registers nothing but that message; Pi itself still runs). A missing file means defaults and is
// never generated. Branch runtime config (enabled, policy of a resumed branch) lives in the store.

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import * as v from "valibot";
import { PUBLICATION_POLICIES, type PublicationPolicy } from "../../storage/core/codec.ts";
import { defaultStoreRoot } from "../../storage/layout.ts";
import { DEFAULT_PUBLICATION_POLICY } from "../../runtime/publication.ts";

export const CONFIG_FILE_NAME = "state-flow.json";

export interface StateFlowConfig {
  /** Absolute store root. */
  directory: string;
  autoStart: boolean;
  logging: boolean;
  remotePublication: PublicationPolicy;
  /** Where the settings came from (null when the file is absent and defaults apply). */
  source: string | null;
}

export class StateFlowConfigError extends Error {
  readonly code = "invalid-config";
  constructor(message: string) {
    super(message);
    this.name = "StateFlowConfigError";
  }
}

const ConfigSchema = v.strictObject(
  {
    directory: v.optional(v.pipe(v.string("must be a string path"), v.minLength(1, "must not be empty"))),
    autoStart: v.optional(v.boolean("must be true or false")),
    logging: v.optional(v.boolean("must be true or false")),
    remotePublication: v.optional(
      v.picklist(PUBLICATION_POLICIES, `must be one of ${PUBLICATION_POLICIES.map((p) => `"${p}"`).join(", ")}`),
    ),
  },
  "is not a known setting (known: directory, autoStart, logging, remotePublication)",
);

/** Expands `~` / `~/…` and resolves relative paths from the configuration's own folder. */
export function resolveDirectory(directory: string, configDir: string, home = homedir()): string {
  if (directory === "~") return home;
  if (directory.startsWith("~/")) return join(home, directory.slice(2));
  return isAbsolute(directory) ? resolve(directory) : resolve(configDir, directory);
}

export function loadConfig(agentDir: string, home = homedir()): StateFlowConfig {
  const file = join(agentDir, CONFIG_FILE_NAME);
  const defaults: StateFlowConfig = {
    directory: defaultStoreRoot(agentDir),
    autoStart: false,
    logging: false,
    remotePublication: DEFAULT_PUBLICATION_POLICY,
    source: null,
  };
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return defaults;
    throw new StateFlowConfigError(
      `${file}: cannot be read (${(error as Error).message}); fix its permissions or remove it`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // (one line: JSON.parse quotes the offending text, line breaks included)
    const reason = (error as Error).message.replace(/\r?\n/g, "\\n");
    throw new StateFlowConfigError(`${file}: invalid JSON (${reason}); fix the file or remove it to use defaults`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new StateFlowConfigError(
      `${file}: must be a JSON object such as {"autoStart": false}; fix the file or remove it to use defaults`,
    );
  }
  const result = v.safeParse(ConfigSchema, raw);
  if (!result.success) {
    const issue = result.issues[0]!;
    const key = String((issue.path?.[0] as { key?: unknown } | undefined)?.key ?? "");
    const value = (raw as Record<string, unknown>)[key];
    const fix = Object.hasOwn(ConfigSchema.entries, key)
      ? "correct the value, or remove the key to use its default"
      : "correct the key's spelling, or remove it";
    throw new StateFlowConfigError(`${file}: "${key}" = ${JSON.stringify(value)} ${issue.message}; ${fix}`);
  }
  const config = result.output;
  return {
    directory: config.directory ? resolveDirectory(config.directory, dirname(file), home) : defaults.directory,
    autoStart: config.autoStart ?? defaults.autoStart,
    logging: config.logging ?? defaults.logging,
    remotePublication: config.remotePublication ?? defaults.remotePublication,
    source: file,
  };
}
