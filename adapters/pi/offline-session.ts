// An offline Pi AgentSession with Pi's faux model provider: the recipe the demo and the tests
// share (design.md §3). No network, no credentials, compaction and retries off, extensions given
// as factories; the caller binds them (bindings differ: a demo prints, tests record). Also the
// builders of the scripted model steps both feed it.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  InMemoryCredentialStore,
  fauxAssistantMessage,
  fauxProvider,
  fauxText,
  fauxToolCall,
  type AssistantMessage,
} from "@earendil-works/pi-ai";
import {
  DefaultResourceLoader,
  ModelRuntime,
  SessionManager,
  SettingsManager,
  createAgentSession,
  type AgentSession,
  type ExtensionFactory,
} from "@earendil-works/pi-coding-agent";

export interface OfflineSessionOptions {
  cwd: string;
  agentDir: string;
  /** Where Pi's model runtime keeps its (empty) model store. */
  modelsStorePath: string;
  extensionFactories: ExtensionFactory[];
  sessionManager: SessionManager;
  modelId?: string;
  /** Pi's tool allowlist (the SDK's `tools`, the CLI's `--tools`); omitted: every tool. */
  tools?: string[];
  /** Load Pi's skills (the agent dir's and the project's `.pi/skills`); default off. */
  skills?: boolean;
  /** Skill files or directories loaded as an installed package's `pi.skills` are (loaded even without `skills`). */
  skillPaths?: string[];
}

export interface OfflineSession {
  session: AgentSession;
  faux: ReturnType<typeof fauxProvider>;
  /** Extension loading errors Pi collected (it keeps running without the failed extension). */
  loadErrors: string[];
}

export async function createOfflineSession(options: OfflineSessionOptions): Promise<OfflineSession> {
  const modelRuntime = await ModelRuntime.create({
    credentials: new InMemoryCredentialStore(),
    modelsPath: null,
    modelsStorePath: options.modelsStorePath,
    refreshOnCreate: false,
  } as never);
  const faux = fauxProvider({ provider: "faux", models: [{ id: options.modelId ?? "faux-1" }] });
  modelRuntime.registerNativeProvider(faux.provider);
  const settingsManager = SettingsManager.inMemory({
    compaction: { enabled: false },
    retry: { enabled: false },
  } as never);
  const loader = new DefaultResourceLoader({
    cwd: options.cwd,
    agentDir: options.agentDir,
    settingsManager,
    extensionFactories: options.extensionFactories,
    noSkills: !options.skills,
    additionalSkillPaths: options.skillPaths ?? [],
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
  } as never);
  await loader.reload();
  const { session } = await createAgentSession({
    cwd: options.cwd,
    agentDir: options.agentDir,
    model: faux.getModel(),
    thinkingLevel: "off",
    modelRuntime,
    resourceLoader: loader,
    sessionManager: options.sessionManager,
    settingsManager,
    ...(options.tools ? { tools: options.tools } : {}),
  } as never);
  return { session, faux, loadErrors: loader.getExtensions().errors.map((e) => e.error) };
}

/** Tool-call arguments as this Pi's faux provider types them (0.84: a record; 1.x: a JSON object). */
export type ToolArgs = Parameters<typeof fauxToolCall>[1];

/** One scripted faux-model response. */
export type ScriptedStep = () => AssistantMessage;

/**
 * Builders of scripted faux-model steps: a final answer, one tool call (optionally with text
 * before it), several tool calls in one response. Tool-call ids are `<idPrefix>-<n>`.
 */
export function scriptedSteps(idPrefix: string) {
  let n = 0;
  const nextId = () => `${idPrefix}-${++n}`;
  return {
    say:
      (text: string, stopReason: AssistantMessage["stopReason"] = "stop"): ScriptedStep =>
      () =>
        fauxAssistantMessage([fauxText(text)], { stopReason }),
    call: (name: string, args: ToolArgs, options: { id?: string; text?: string } = {}): ScriptedStep => {
      const id = options.id ?? nextId();
      return () =>
        fauxAssistantMessage([...(options.text ? [fauxText(options.text)] : []), fauxToolCall(name, args, { id })], {
          stopReason: "toolUse",
        });
    },
    calls:
      (...list: [string, ToolArgs][]): ScriptedStep =>
      () =>
        fauxAssistantMessage(
          list.map(([name, args]) => fauxToolCall(name, args, { id: nextId() })),
          { stopReason: "toolUse" },
        ),
  };
}

type CommandActions = NonNullable<Parameters<AgentSession["bindExtensions"]>[0]["commandContextActions"]>;

/**
 * The command actions of an offline binding: waiting, tree navigation and reload work; a new,
 * forked or switched session is cancelled (an offline run drives exactly one session).
 */
export function offlineCommandActions(session: AgentSession): CommandActions {
  return {
    waitForIdle: () => session.waitForIdle(),
    navigateTree: (id: string, opts?: never) => session.navigateTree(id, opts),
    reload: () => session.reload(),
    newSession: async () => ({ cancelled: true }),
    fork: async () => ({ cancelled: true }),
    switchSession: async () => ({ cancelled: true }),
  } as unknown as CommandActions;
}

/**
 * Git for an offline session: no system config, an empty global config in `dir`, none of the
 * caller's GIT_* overrides, and a fixed identity named `who`, so runs never touch the user's git.
 */
export function isolatedGitEnv(dir: string, who: string): NodeJS.ProcessEnv {
  const gitConfig = join(dir, "gitconfig");
  writeFileSync(gitConfig, "");
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: gitConfig };
  for (const key of Object.keys(env))
    if (/^GIT_(AUTHOR|COMMITTER)_|^GIT_(DIR|INDEX_FILE|WORK_TREE)$/.test(key)) delete env[key];
  const email = `${who.split(" ").pop()!.toLowerCase()}@state-flow.invalid`;
  return {
    ...env,
    GIT_AUTHOR_NAME: who,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: who,
    GIT_COMMITTER_EMAIL: email,
  };
}
