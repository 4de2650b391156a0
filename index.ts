// State Flow — public exports only. Composition lives in adapters/pi; logic lives in
// storage/ (durable backends; storage/core/ the temporal algebra), runtime/ and machines/ (lifecycle statecharts).
import { createStateFlowExtension } from "./adapters/pi/extension.ts";

export { createStateFlowExtension, type StateFlowExtensionOptions } from "./adapters/pi/extension.ts";
export type { RuntimeAccessor } from "./adapters/pi/controller.ts";
export { readTemporalState, type TemporalView, type TemporalRead } from "./storage/core/temporal.ts";
export { selectArtifactsByTags, type TagMatch } from "./storage/core/artifacts.ts";
export { planArtifactMaintenance, MAINTENANCE_DEFAULTS, type MaintenancePlan } from "./storage/core/maintenance.ts";

/** Pi loads this factory through the package manifest ("pi": {"extensions": ["./index.ts"]}). */
export default createStateFlowExtension();
