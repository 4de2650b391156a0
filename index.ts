// State Flow — public exports only. Composition lives in adapters/pi; logic lives in
// storage/ (durable backends; storage/core/ the temporal algebra), runtime/ and machines/ (lifecycle statecharts).
import * as codingAgent from "@earendil-works/pi-coding-agent";
import type { ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { stateFlowExtension, type StateFlowExtensionOptions } from "./adapters/pi/extension.ts";
import { piHostOf } from "./adapters/pi/pi-host.ts";

export type { StateFlowExtensionOptions } from "./adapters/pi/extension.ts";
export type { RuntimeAccessor } from "./adapters/pi/controller.ts";
export { readTemporalState, type TemporalView, type TemporalRead } from "./storage/core/temporal.ts";
export { selectArtifactsByTags, type TagMatch } from "./storage/core/artifacts.ts";
export { planArtifactMaintenance, MAINTENANCE_DEFAULTS, type MaintenancePlan } from "./storage/core/maintenance.ts";

/** State Flow for the Pi whose modules this package resolves (an SDK session's, a test's). */
export function createStateFlowExtension(options: StateFlowExtensionOptions = {}): ExtensionFactory {
  return stateFlowExtension(piHostOf(codingAgent, { Text }), options);
}

/**
 * State Flow with options from state-flow.json, for an SDK session's `extensionFactories`. Pi itself loads
 * adapters/pi/state-flow.ts (package.json `pi.extensions`), which prefers the build in dist/.
 */
export default createStateFlowExtension();
