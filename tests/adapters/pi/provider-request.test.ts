import { describe, expect, it } from "vitest";
import type { Context } from "@earendil-works/pi-ai";
import { providerRequest } from "../../../adapters/pi/provider-request.ts";
import { PI_VERSION } from "../../support/pi-version.ts";

const user = { role: "user" as const, content: "hi", timestamp: 1 };
const tool = (name: string) => ({ name, description: name, parameters: { type: "object", properties: {} } });

describe(`providerRequest (Pi ${PI_VERSION})`, () => {
  it("reads Pi 0.84's {systemPrompt, tools, messages} as given", () => {
    const context = { systemPrompt: "base", tools: [tool("read")], messages: [user] } as unknown as Context;
    expect(providerRequest(context)).toEqual({ systemPrompt: "base", tools: [tool("read")], messages: [user] });
    expect(providerRequest({ messages: [user] } as Context)).toEqual({
      systemPrompt: undefined,
      tools: [],
      messages: [user],
    });
  });

  it.runIf(!PI_VERSION.startsWith("0."))("replays Pi 1.x's system messages into the prompt and the tool set", () => {
    const system = { role: "system", content: "base", toolsAdded: [tool("read"), tool("patch_state")], timestamp: 0 };
    const later = { role: "system", content: "more", toolsRemoved: [{ name: "read" }], timestamp: 2 };
    const request = providerRequest({ messages: [system, user, later] } as unknown as Context);
    expect(request.systemPrompt).toContain("base");
    expect(request.tools.map((t) => t.name)).toEqual(["patch_state"]);
    expect(request.messages).toEqual([user]);
  });
});
