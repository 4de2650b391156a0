// State Flow as a Pi extension: registers patch_state / read_state, its commands and the
// lifecycle hooks, and forwards everything to the controller. This is the only module that
// speaks Pi's extension API; it reads the agent-level configuration once, at load. An invalid
// state-flow.json does not fail Pi's loading (Pi would exit for every project): State Flow then
// registers no tool, hook or store access, only says what is wrong at each session start and
// answers its commands with that; /reload re-reads the file.

import { join } from "node:path";
import type { ExtensionAPI, ExtensionContext, ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { loadInspection } from "../inspect/inspector.ts";
import { StateFlowConfigError, loadConfig, type StateFlowConfig } from "./config.ts";
import { StateFlowController, type RuntimeAccessor } from "./controller.ts";
import type { PiHost } from "./pi-host.ts";
import { patchResultRenderer } from "./tool-render.ts";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import {
  PATCH_STATE_DESCRIPTION,
  patchStateJsonSchema,
  READ_STATE_DESCRIPTION,
  readStateJsonSchema,
  parsePatchStateArgs,
  parseReadStateArgs,
} from "./tool-schemas.ts";

export interface StateFlowExtensionOptions {
  /** Pi agent directory (profile); default: the running Pi's (PiHost.agentDir: PI_CODING_AGENT_DIR). */
  agentDir?: string;
  /** State store root, overriding state-flow.json's directory. */
  repositoryRoot?: string;
  /** Knowledge source root (Markdown State Flow compiles artifacts from); default `<agentDir>/knowledge`. */
  knowledgeRoot?: string;
  /** Receives a cached-runtime accessor with `read(offset?, scope?)`. */
  onRuntime?: (accessor: RuntimeAccessor) => void;
  /** Environment used for git (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Which form of the package Pi loaded, and why (state-flow.ts): the last section of /state-flow-status. */
  loadedFrom?: string;
}

function text(value: string) {
  return [{ type: "text" as const, text: value }];
}

/** State Flow for the Pi that `host` describes (pi-host.ts), as Pi loads it: through state-flow.ts or index.ts. */
export function stateFlowExtension(host: PiHost, options: StateFlowExtensionOptions = {}): ExtensionFactory {
  return async (pi: ExtensionAPI) => {
    const agentDir = options.agentDir ?? host.agentDir();
    let config: StateFlowConfig;
    try {
      config = loadConfig(agentDir);
    } catch (error) {
      if (!(error instanceof StateFlowConfigError)) throw error;
      registerConfigError(pi, error);
      return;
    }
    const inspection = await loadInspection(options.env ?? process.env);
    const controller = new StateFlowController(pi, {
      agentDir,
      config,
      storeRoot: options.repositoryRoot ?? config.directory,
      knowledgeRoot: options.knowledgeRoot ?? join(agentDir, "knowledge"),
      env: options.env ?? process.env,
      piVersion: host.version,
      ...(host.formatSkills ? { formatSkills: host.formatSkills } : {}),
      ...(options.loadedFrom ? { loadedFrom: options.loadedFrom } : {}),
      inspection,
      ...(options.onRuntime ? { onRuntime: options.onRuntime } : {}),
      registerTools: () => registerTools(pi, controller, host),
    });

    // Pi runs extension commands at once, even while a run streams; start and stop publish from
    // the branch's runtime, so they wait for the run (and its patch_state publications) to settle.
    pi.registerCommand("state-flow-start", {
      description: "Initialize missing State Flow materialization and enable this branch",
      handler: async (_args, ctx) => {
        await ctx.waitForIdle();
        await controller.command("start", ctx);
      },
    });
    pi.registerCommand("state-flow-stop", {
      description: "Disable State Flow on this branch without deleting semantic state",
      handler: async (_args, ctx) => {
        await ctx.waitForIdle();
        await controller.command("stop", ctx);
      },
    });
    pi.registerCommand("state-flow-status", {
      description: "Inspect State Flow runtime, semantic, freshness and publication diagnostics",
      handler: async (_args, ctx) => controller.showStatus(ctx),
    });
    // Queries like status: they read the cached runtime (and, for older boundaries, Git) and change nothing.
    pi.registerCommand("state-flow-show", {
      description: "Show the state at a boundary: /state-flow-show [scope] [offset|transition id] [path]",
      handler: async (args, ctx) => controller.showInspection("show", args, ctx),
    });
    pi.registerCommand("state-flow-history", {
      description: "List the boundaries and what changed, newest first: /state-flow-history [scope] [--all] [--page N]",
      handler: async (args, ctx) => controller.showInspection("history", args, ctx),
    });
    pi.registerCommand("state-flow-diff", {
      description: "What changed between two boundaries: /state-flow-diff <a> <b> [scope] (offsets or transition ids)",
      handler: async (args, ctx) => controller.showInspection("diff", args, ctx),
    });

    pi.registerCommand("state-flow-sync", {
      description:
        "Bring another machine's changes in from the store's remote now, or choose a side for a scope both " +
        "changed: /state-flow-sync [keep-local|take-remote|re-apply [scope]]",
      handler: async (args, ctx) => {
        await ctx.waitForIdle();
        await controller.syncCommand(args, ctx);
      },
    });
    pi.registerCommand("state-flow-refresh", {
      description: "Ask the next runs to reread and recompile Knowledge: /state-flow-refresh [source|all]",
      handler: async (args, ctx) => controller.refreshKnowledge(args, ctx),
    });

    pi.registerCommand("state-flow-fork", {
      description:
        "A new session from a boundary, with its own copy of this session's state there: /state-flow-fork <offset|id>",
      handler: async (args, ctx) => {
        await ctx.waitForIdle();
        await controller.fork(args, ctx);
      },
    });

    pi.on("session_start", (event, ctx) => controller.sessionStart(event.reason, ctx));
    pi.on("session_tree", (_event, ctx) => controller.tree(ctx));
    pi.on("session_shutdown", (event, ctx) => controller.shutdown(event.reason, ctx));
    // (the prompt is read after the handler may have changed the options: Pi 1.x renders it from them)
    pi.on("before_agent_start", (event) => controller.beforeAgentStart(event, () => event.systemPrompt));
    pi.on("agent_start", () => controller.agentStart());
    pi.on("input", () => controller.input());
    pi.on("context", async (event) => {
      await controller.prepareContext();
      const messages = controller.context(event.messages);
      return messages ? { messages } : undefined;
    });
    pi.on("before_provider_request", (event) => controller.providerRequest(event.payload));
    pi.on("tool_execution_start", (event) => controller.toolExecutionStart(event.toolCallId, event.args));
    pi.on("tool_call", (event, ctx) => controller.toolCall(event.toolCallId, ctx, event.input));
    pi.on("tool_execution_end", (event) =>
      controller.toolExecutionEnd(event.toolCallId, event.toolName, event.isError, event.result),
    );
    pi.on("message_end", (event) => controller.messageEnd(event.message));
    pi.on("turn_end", (_event, ctx) => controller.turnEnd(ctx));
    pi.on("agent_settled", () => controller.agentSettled());
  };
}

/** What State Flow says, at every session start and for each of its commands, while its configuration is invalid. */
export function configErrorText(error: StateFlowConfigError): string {
  return (
    `State Flow is off: ${error.message}. Then run /reload (or restart Pi) to load it; until then it adds ` +
    `no tools and reads or writes no state.`
  );
}

/**
 * The whole extension while state-flow.json is invalid: the named error at every session start
 * and as the answer of every State Flow command, which does nothing else (so a typed command is not sent to
 * the model as a prompt). No tools, no context or provider hooks, no store.
 */
function registerConfigError(pi: ExtensionAPI, error: StateFlowConfigError): void {
  const message = configErrorText(error);
  // As the controller's notices: Pi's notify is a no-op without a UI (print and JSON modes), so stderr,
  // where a command right after the session start would only repeat the same line.
  let printed = false;
  const report = (ctx: ExtensionContext, failedCommand: boolean) => {
    if (ctx.hasUI) ctx.ui.notify(message, "error");
    else if (!printed) {
      process.stderr.write(`[state-flow] error: ${message}\n`);
      printed = true;
    }
    // A start or stop that could not happen is a failed command in print mode; Pi's own run is not.
    if (failedCommand && (ctx.mode === "print" || ctx.mode === "json")) process.exitCode = 1;
  };
  const description = "State Flow is off: state-flow.json is invalid (run to see why)";
  pi.registerCommand("state-flow-start", { description, handler: async (_args, ctx) => report(ctx, true) });
  pi.registerCommand("state-flow-stop", { description, handler: async (_args, ctx) => report(ctx, true) });
  for (const name of [
    "state-flow-status",
    "state-flow-show",
    "state-flow-history",
    "state-flow-diff",
    "state-flow-fork",
    "state-flow-sync",
    "state-flow-refresh",
  ]) {
    pi.registerCommand(name, { description, handler: async (_args, ctx) => report(ctx, false) });
  }
  pi.on("session_start", (_event, ctx) => report(ctx, false));
}

/** patch_state and read_state; registered by the controller on first activation only. */
function registerTools(pi: ExtensionAPI, controller: StateFlowController, host: PiHost): void {
  pi.registerTool({
    name: "patch_state",
    label: "Patch state",
    description: PATCH_STATE_DESCRIPTION,
    parameters: patchStateJsonSchema() as never,
    executionMode: "sequential",
    // Runs before Pi's schema validation, so every refusal carries State Flow's named message.
    prepareArguments(args: unknown) {
      parsePatchSet(args);
      return args as never;
    },
    async execute(_toolCallId: string, params: unknown) {
      const result = await controller.patchState(parsePatchStateArgs(params));
      return { content: text(result.text), details: result.details };
    },
    // The person's line for the result (the text above is the model's): tool-render.ts.
    renderResult: patchResultRenderer(host.Text),
  } as never);

  pi.registerTool({
    name: "read_state",
    label: "Read state",
    description: READ_STATE_DESCRIPTION,
    parameters: readStateJsonSchema() as never,
    async execute(_toolCallId: string, params: unknown) {
      const { offset, scope } = parseReadStateArgs(params);
      const read = controller.readState(offset, scope);
      return { content: text(JSON.stringify(read, null, 2)), details: { offset, scope, boundary: read.boundary } };
    },
  } as never);
}
