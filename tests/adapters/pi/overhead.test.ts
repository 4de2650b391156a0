// The fixed cost State Flow adds to every model request (issue 27, item 3): the tool schemas and
// the system prompt of a real Pi AgentSession with State Flow active, against the same session
// without State Flow — counted the way `npm run bench` counts them (bench/e2e-tokens.ts: Pi's own
// estimateTokens over the tools JSON and over the system prompt). The package's Skill is loaded as
// an installed package's `pi.skills` are, with Pi's skill listing on for both sessions: alone, it
// is not listed (adapters/pi/skill-listing.ts); beside another Skill, Pi lists it and its entry
// is charged to State Flow.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fauxAssistantMessage, fauxText, fauxToolCall, type Context } from "@earendil-works/pi-ai";
import { SessionManager, estimateTokens } from "@earendil-works/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { PROTOCOL } from "../../../adapters/pi/context.ts";
import { createStateFlowExtension } from "../../../index.ts";
import { createOfflineSession, isolatedGitEnv, offlineCommandActions } from "../../../adapters/pi/offline-session.ts";
import { providerRequest, type ProviderRequest } from "../../../adapters/pi/provider-request.ts";

/** The ceiling of issue 27: tools + system prompt at most this many tokens above native Pi's. */
const MAX_OVERHEAD = 800;

const repoRoot = resolve(import.meta.dirname, "../../..");
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const textTokens = (text: string) =>
  estimateTokens({ role: "user", content: [{ type: "text", text }], timestamp: 0 } as never);

/** Tools as bench/e2e-tokens.ts bills them: name, description and parameters, as JSON. */
const toolTokens = (request: ProviderRequest) =>
  textTokens(
    JSON.stringify(request.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))),
  );

const messageText = (message: unknown): string => {
  const content = (message as { content: unknown }).content;
  if (typeof content === "string") return content;
  return (content as { text?: string }[]).map((b) => b.text ?? "").join("");
};

const OTHER_SKILL = "---\nname: house-style\ndescription: House style for answers\n---\n# House style\n";

/** The first provider request of a one-prompt session, with or without State Flow (auto-started). */
async function firstRequest(stateFlow: boolean, otherSkill = false): Promise<ProviderRequest> {
  const root = mkdtempSync(join(tmpdir(), "sf-overhead-"));
  roots.push(root);
  const agentDir = join(root, "agent");
  const cwd = join(root, "project");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  process.env.PI_CODING_AGENT_DIR = agentDir;
  process.env.PI_OFFLINE = "1";
  if (stateFlow) writeFileSync(join(agentDir, "state-flow.json"), JSON.stringify({ autoStart: true }));
  if (otherSkill) {
    mkdirSync(join(agentDir, "skills", "house-style"), { recursive: true });
    writeFileSync(join(agentDir, "skills", "house-style", "SKILL.md"), OTHER_SKILL);
  }
  const env = isolatedGitEnv(root, "State Flow Test");
  const { session, faux, loadErrors } = await createOfflineSession({
    cwd,
    agentDir,
    modelsStorePath: join(root, "models.json"),
    extensionFactories: stateFlow ? [createStateFlowExtension({ agentDir, env })] : [],
    sessionManager: SessionManager.inMemory(cwd),
    skills: true,
    skillPaths: stateFlow ? [join(repoRoot, "skills")] : [],
  });
  expect(loadErrors).toEqual([]);
  await session.bindExtensions({ commandContextActions: offlineCommandActions(session) } as never);
  const requests: ProviderRequest[] = [];
  const record = (context: Context) => void requests.push(providerRequest(context));
  faux.setResponses([
    (context: Context) => {
      record(context);
      return stateFlow
        ? fauxAssistantMessage([fauxToolCall("patch_state", { final: true }, { id: "f" })], { stopReason: "toolUse" })
        : fauxAssistantMessage([fauxText("Hi.")], { stopReason: "stop" });
    },
    (context: Context) => {
      record(context);
      return fauxAssistantMessage([fauxText("Hi.")], { stopReason: "stop" });
    },
  ]);
  await session.prompt("Hello");
  await session.waitForIdle();
  await session.dispose?.();
  return requests[0]!;
}

function overhead(native: ProviderRequest, flow: ProviderRequest) {
  const tools = toolTokens(flow) - toolTokens(native);
  const system = textTokens(flow.systemPrompt ?? "") - textTokens(native.systemPrompt ?? "");
  const protocol = textTokens(`\n\n${PROTOCOL}`);
  const runtimeContext = textTokens(messageText(flow.messages[0]));
  return { tools, system, protocol, rest: system - protocol, runtimeContext, total: tools + system };
}

describe("State Flow's fixed cost per request (tools + system prompt)", () => {
  it(`stays within native Pi + ${MAX_OVERHEAD} tokens, measured in real sessions`, async () => {
    const flow = await firstRequest(true);
    expect(flow.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
    expect(flow.systemPrompt).toContain("## State Flow protocol");
    expect(flow.systemPrompt, "alone, the package's Skill is not listed").not.toContain("state-flow-memory");
    expect(flow.systemPrompt).not.toContain("<available_skills>");
    const cost = overhead(await firstRequest(false), flow);
    console.log(
      `fixed overhead: tools +${cost.tools}, system prompt +${cost.system} (protocol ${cost.protocol}, ` +
        `other ${cost.rest}); empty runtime context ${cost.runtimeContext} tokens`,
    );
    expect(cost.rest, "nothing but the protocol is added to the system prompt").toBeLessThanOrEqual(0);
    expect(cost.total).toBeLessThanOrEqual(MAX_OVERHEAD);
  }, 60_000);

  it("beside another Skill, Pi lists State Flow's too, and the total still fits", async () => {
    const flow = await firstRequest(true, true);
    expect(flow.systemPrompt).toContain("<name>house-style</name>");
    expect(flow.systemPrompt).toMatch(/<name>state-flow-memory<\/name>[\s\S]*skills\/state-flow-memory\/SKILL\.md/);
    const cost = overhead(await firstRequest(false, true), flow);
    console.log(`with another Skill: tools +${cost.tools}, system prompt +${cost.system} (Skill entry ${cost.rest})`);
    expect(cost.total).toBeLessThanOrEqual(MAX_OVERHEAD);
  }, 60_000);
});
