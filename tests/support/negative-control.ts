// Negative controls of the machines' path suites: a mutated machine on which one invariant's check
// must fire. The violations a check reports start with its invariant id.
import { expect } from "vitest";

/** Fails unless `violations` holds one reported by invariant `id`; returns them for further checks. */
export function expectCheckFires(violations: readonly string[], id: string): readonly string[] {
  expect(
    violations.some((v) => v.startsWith(`${id} `)),
    `${id} check did not fire:\n${violations.join("\n")}`,
  ).toBe(true);
  return violations;
}
