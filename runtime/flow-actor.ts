// Every machine actor the runtime runs is created here, so opt-in live inspection
// (adapters/inspect, STATE_FLOW_INSPECT) sees all of them — spawned children included, since an
// inspect observer watches the whole actor system of the actor it is given to.
import { createActor, type AnyStateMachine, type Actor, type InspectionEvent, type Observer } from "xstate";

/** A live inspection sink (adapters/inspect/inspector.ts opens one over @statelyai/inspect). */
export interface FlowInspection {
  url: string;
  inspect: Observer<InspectionEvent>;
  stop(): void;
}

/** createActor with the live inspector attached when inspection is enabled. */
export function createFlowActor<TMachine extends AnyStateMachine>(
  machine: TMachine,
  options: { input?: unknown; inspection?: FlowInspection | undefined } = {},
): Actor<TMachine> {
  return createActor(machine, {
    ...(options.input === undefined ? {} : { input: options.input }),
    ...(options.inspection ? { inspect: options.inspection.inspect } : {}),
  } as never) as Actor<TMachine>;
}
