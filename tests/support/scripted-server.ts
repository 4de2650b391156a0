// A scripted OpenAI-compatible model server for tests that run the real `pi` binary: Pi's
// `openai-completions` API (POST /v1/chat/completions, streamed as SSE `data: <chunk>` lines, a final
// usage chunk, then `data: [DONE]`). It listens on 127.0.0.1 on a port the OS picks, records every
// request body, and answers each one from a script — a function of the request — so a test can check
// both what the person saw and what the model was sent. The test owns it: `close()` in afterEach.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One message of a chat-completions request (only the fields the tests read). */
export interface ChatMessage {
  role: string;
  content?: string | { type: string; text?: string }[] | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** A chat-completions request body as Pi sends it. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  stream?: boolean;
}

/** What the server answers: text, tool calls (one assistant turn), or an HTTP error. */
export type Reply =
  | { text: string }
  | { toolCalls: { name: string; args: Record<string, unknown> }[] }
  | { status: number; error: string };

/** Chooses the reply to a request; `index` counts the requests this server received, from 0. */
export type Script = (request: ChatRequest, index: number) => Reply;

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>/v1`, the provider's baseUrl. */
  readonly baseUrl: string;
  /** Every request body received, in order. */
  readonly requests: ChatRequest[];
  /** The script answering the next requests (tests may replace it between runs). */
  script: Script;
  close(): Promise<void>;
}

/** A message's text (string content or its text blocks). */
export function messageText(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return (content ?? []).map((block) => block.text ?? "").join("");
}

/** The names of the tools a request offers. */
export function toolNames(request: ChatRequest): string[] {
  return (request.tools ?? []).map((tool) => tool.function.name);
}

/** The system prompt (Pi sends it as the first message, role `system` or `developer`). */
export function systemPrompt(request: ChatRequest): string {
  return request.messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .map(messageText)
    .join("\n");
}

/** The tool results sent after the last assistant message (none: the model has not been answered). */
export function pendingToolResults(request: ChatRequest): ChatMessage[] {
  const lastAssistant = request.messages.map((m) => m.role).lastIndexOf("assistant");
  return lastAssistant < 0 ? [] : request.messages.slice(lastAssistant + 1).filter((m) => m.role === "tool");
}

/** Every message's text, one per line: what a test searches for values the model was shown. */
export function requestText(request: ChatRequest): string {
  return request.messages.map(messageText).join("\n");
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((done, fail) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => done(body));
    req.on("error", fail);
  });
}

function answer(res: ServerResponse, reply: Reply, id: string): void {
  if ("status" in reply) {
    res.writeHead(reply.status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: reply.error, type: "invalid_request_error" } }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const base = { id, object: "chat.completion.chunk", created: 0, model: "mock-1" };
  const send = (chunk: object) => res.write(`data: ${JSON.stringify({ ...base, ...chunk })}\n\n`);
  if ("text" in reply) {
    send({ choices: [{ index: 0, delta: { role: "assistant", content: reply.text } }] });
    send({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
  } else {
    const toolCalls = reply.toolCalls.map((call, index) => ({
      index,
      id: `${id}-call-${index}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.args) },
    }));
    send({ choices: [{ index: 0, delta: { role: "assistant", tool_calls: toolCalls } }] });
    send({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });
  }
  send({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  res.end("data: [DONE]\n\n");
}

/** Starts a server answering from `script`; resolves once it listens. */
export async function startScriptedServer(script: Script): Promise<ScriptedServer> {
  const requests: ChatRequest[] = [];
  const state = { script };
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
          res.writeHead(404).end();
          return;
        }
        let reply: Reply;
        const index = requests.length;
        try {
          const request = JSON.parse(body) as ChatRequest;
          requests.push(request);
          reply = state.script(request, index);
        } catch (error) {
          // a body that is not JSON or a script that throws: the test sees a 500 and fails, never hangs
          reply = { status: 500, error: `scripted server: ${String(error)}` };
        }
        answer(res, reply, `chatcmpl-${index}`);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", done);
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get script() {
      return state.script;
    },
    set script(next: Script) {
      state.script = next;
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
