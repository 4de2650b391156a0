// Opt-in live inspection: with STATE_FLOW_INSPECT=ws://host:port every machine actor created via
// runtime/flow-actor.ts streams its events and snapshots through @statelyai/inspect's WebSocket
// inspector. Off by default at zero cost: the inspector module is imported dynamically, only when
// the variable is set, and actors get no inspect observer otherwise.
import type { FlowInspection } from "../../runtime/flow-actor.ts";

export type { FlowInspection };
export const INSPECT_ENV = "STATE_FLOW_INSPECT";

export class InspectUrlError extends Error {
  constructor(value: string) {
    super(`${INSPECT_ENV} must be a ws:// or wss:// URL, got ${JSON.stringify(value)}`);
    this.name = "InspectUrlError";
  }
}

/** Reads STATE_FLOW_INSPECT; returns undefined (and imports nothing) when unset or empty. */
export async function loadInspection(
  env: Record<string, string | undefined> = process.env,
): Promise<FlowInspection | undefined> {
  const value = env[INSPECT_ENV]?.trim();
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InspectUrlError(value);
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:") throw new InspectUrlError(value);
  const { createWebSocketInspector } = await import("@statelyai/inspect");
  const inspector = createWebSocketInspector({ url: value });
  return { url: value, inspect: inspector.inspect, stop: () => inspector.stop() };
}
