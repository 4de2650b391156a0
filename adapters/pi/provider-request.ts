// What a provider was asked, in one shape for every Pi version State Flow supports: Pi 0.84
// hands the faux provider `{systemPrompt, tools, messages}`; Pi 0.86 and later carry the prompt
// and the tool set in the transcript's system messages instead (pi-ai's getCurrentSystemPrompt
// and getCurrentTools replay them). The offline faux sessions (the demo, the tests) read what
// the model was shown through it.

import * as piAi from "@earendil-works/pi-ai";
import type { Context, Message, Tool } from "@earendil-works/pi-ai";

export interface ProviderRequest {
  readonly systemPrompt: string | undefined;
  readonly tools: readonly Tool[];
  /** The conversation: every message but the system messages. */
  readonly messages: Message[];
}

type Replay = {
  getCurrentSystemPrompt?: (messages: readonly unknown[]) => string;
  getCurrentTools?: (messages: readonly unknown[]) => Tool[];
};

const replay = piAi as unknown as Replay;

const isSystem = (message: unknown): boolean => (message as { role?: unknown }).role === "system";

export function providerRequest(context: Context): ProviderRequest {
  const all = context.messages as readonly unknown[];
  if (!all.some(isSystem) || !replay.getCurrentSystemPrompt || !replay.getCurrentTools) {
    return { systemPrompt: context.systemPrompt, tools: context.tools ?? [], messages: context.messages };
  }
  return {
    systemPrompt: replay.getCurrentSystemPrompt(all),
    tools: replay.getCurrentTools(all),
    messages: all.filter((message) => !isSystem(message)) as Message[],
  };
}
