// A machine's state value as one readable line: "active.bootstrap.fromHandoff", parallel regions
// joined by "|" (e.g. "open.framing.framed|answer.resolving"). For status output and test messages.

export function flattenValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.map(([k, v]) => `${k}.${flattenValue(v)}`).join("|");
  }
  return String(value);
}
