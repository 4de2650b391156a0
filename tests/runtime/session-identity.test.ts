import { describe, expect, it } from "vitest";
import { sessionIdentity } from "../../runtime/session-identity.ts";
import { cwdKey } from "../../storage/layout.ts";

describe("sessionIdentity", () => {
  const id = "11111111-2222-7333-8444-555555555555";
  it("derives the session key from the session file when there is one", () => {
    const source = {
      getSessionFile: () => `/s/2026-01-01T00-00-00-000Z_${id}.jsonl`,
      getHeader: () => null,
      getSessionId: () => id,
    };
    expect(sessionIdentity("/work/p", source)).toEqual({
      cwd: "/work/p",
      cwdKey: cwdKey("/work/p"),
      sessionId: id,
      sessionKey: `2026-01-01T00-00-00-000Z_${id}`,
    });
  });
  it("derives it from the header of an in-memory session", () => {
    const header = { id, timestamp: "2026-01-01T00:00:00.000Z" };
    const source = { getSessionFile: () => undefined, getHeader: () => header, getSessionId: () => id };
    expect(sessionIdentity("/work/p", source).sessionKey).toBe(`2026-01-01T00-00-00-000Z_${id}`);
  });
});
