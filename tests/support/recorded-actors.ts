// What the model-based replays observe of the adapter's own actors: every event an actor took
// and the snapshot it reached after it, as XState's inspection API reports them. A replay hands
// `recorder.inspection` to the extension in place of the opt-in live inspector (which only adds an
// inspect observer to every machine actor the runtime creates), then compares that trail, step by
// step, with a pure actor of the same machine fed the events the Pi actions were expected to
// produce. The recorder only watches: the adapter's actors are never replaced.
import type { AnyEventObject, InspectionEvent } from "xstate";
import type { FlowInspection } from "../../runtime/flow-actor.ts";

export interface RecordedStep {
  event: AnyEventObject;
  value: unknown;
  context: unknown;
  status: string;
  /** The actor's output, once it is done. */
  output?: unknown;
}

export interface RecordedActor {
  machine: string;
  /** The input the actor was created with. */
  input: unknown;
  steps: RecordedStep[];
}

interface InspectedRef {
  logic?: { id?: string };
  options?: { input?: unknown };
}

/** Records the actors of the named machines, whether roots (publication) or the episode's children (the barrier). */
export class ActorRecorder {
  readonly actors: RecordedActor[] = [];
  private readonly byRef = new Map<unknown, RecordedActor>();
  private readonly machines: ReadonlySet<string>;

  constructor(machines: readonly string[]) {
    this.machines = new Set(machines);
  }

  readonly inspect = (ev: InspectionEvent): void => {
    if (ev.type === "@xstate.actor") {
      const ref = ev.actorRef as unknown as InspectedRef;
      const id = ref.logic?.id;
      if (id === undefined || !this.machines.has(id)) return;
      const actor: RecordedActor = { machine: id, input: ref.options?.input, steps: [] };
      this.byRef.set(ev.actorRef, actor);
      this.actors.push(actor);
      return;
    }
    if (ev.type !== "@xstate.snapshot") return;
    const actor = this.byRef.get(ev.actorRef);
    if (!actor || ev.event.type === "xstate.init") return;
    const s = ev.snapshot as { value?: unknown; context?: unknown; status?: string; output?: unknown };
    actor.steps.push({ event: ev.event, value: s.value, context: s.context, status: s.status ?? "", output: s.output });
  };

  /** What the extension takes as its inspection (adapters/inspect's FlowInspection). */
  get inspection(): FlowInspection {
    return { url: "ws://recorder.invalid", inspect: { next: this.inspect }, stop: () => undefined };
  }

  /** The newest recorded actor of `machine` created at or after index `since`. */
  latest(machine: string, since = 0): RecordedActor | undefined {
    for (let i = this.actors.length - 1; i >= since; i--)
      if (this.actors[i]!.machine === machine) return this.actors[i];
    return undefined;
  }
}
