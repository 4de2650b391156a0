// A throwaway Pi profile for running the real `pi` binary against a scripted model server
// (tests/support/scripted-server.ts): its own HOME (with a git identity), agent dir (models.json with
// the server as a custom OpenAI-compatible provider, settings.json choosing it) and project dir, and
// an environment without the caller's GIT_/PI_/STATE_FLOW_ variables. Used by the CLI tests.

import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { piPackageDir } from "./pi-version.ts";
import { messageText, pendingToolResults, toolNames, type ChatRequest, type Reply } from "./scripted-server.ts";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The `pi` binary of the Pi this test run selected (0.84.4, or 1.6.0 with STATE_FLOW_PI=1.6). */
export const piCli = join(
  piPackageDir,
  (JSON.parse(readFileSync(join(piPackageDir, "package.json"), "utf8")) as { bin: { pi: string } }).bin.pi,
);

export interface PiProfile {
  root: string;
  agentDir: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  storeRoot: string;
  configFile: string;
}

/** Writes the profile under a new temporary root (the caller removes `root`). `config`: state-flow.json's text. */
export function createPiProfile(baseUrl: string, config?: string): PiProfile {
  const root = mkdtempSync(join(tmpdir(), "sf-pi-cli-"));
  const agentDir = join(root, "agent");
  const home = join(root, "home");
  const cwd = join(root, "project");
  for (const dir of [agentDir, home, cwd]) mkdirSync(dir, { recursive: true });
  const model = {
    id: "mock-1",
    name: "Scripted mock",
    reasoning: false,
    input: ["text"],
    contextWindow: 100_000,
    maxTokens: 4_000,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  };
  const provider = { baseUrl, api: "openai-completions", apiKey: "x", models: [model] };
  writeFileSync(join(agentDir, "models.json"), JSON.stringify({ providers: { mock: provider } }));
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "mock", defaultModel: "mock-1" }));
  const configFile = join(agentDir, "state-flow.json");
  if (config !== undefined) writeFileSync(configFile, config);
  writeFileSync(join(home, ".gitconfig"), "[user]\n\tname = CLI Person\n\temail = cli-person@state-flow.invalid\n");
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(GIT_|PI_|STATE_FLOW_)/.test(key)) env[key] = value;
  Object.assign(env, { HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", GIT_CONFIG_NOSYSTEM: "1" });
  return { root, agentDir, cwd: realpathSync(cwd), env, storeRoot: join(agentDir, "state-flow"), configFile };
}

/** The person's newest prompt in a request (State Flow's own runtime-context messages aside). */
export function lastPrompt(request: ChatRequest): string {
  const own = (text: string) => text.startsWith("[State Flow");
  return (
    request.messages
      .filter((m) => m.role === "user")
      .map(messageText)
      .filter((text) => !own(text))
      .at(-1) ?? ""
  );
}

export const answerTo = (prompt: string) => `Answer to: ${prompt}`;

/**
 * A model that follows the State Flow protocol: offered patch_state and not yet answered by a tool
 * result, it records the prompt with `final: true`; otherwise it answers.
 */
export function protocolModel(request: ChatRequest): Reply {
  const prompt = lastPrompt(request);
  if (toolNames(request).includes("patch_state") && pendingToolResults(request).length === 0)
    return { toolCalls: [{ name: "patch_state", args: { session: { working: { note: prompt } }, final: true } }] };
  return { text: answerTo(prompt) };
}
