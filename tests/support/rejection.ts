// Asserting refusals: the call must throw a StateFlowError (never another error, never succeed).
import { expect } from "vitest";
import { StateFlowError } from "../../storage/core/errors.ts";

export function rejection(fn: () => unknown): StateFlowError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StateFlowError);
    return error as StateFlowError;
  }
  throw new Error("expected a StateFlowError, but the call succeeded");
}
