import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { REQUESTS_ENTRY, carriedOnBranch, sameCarried } from "../../../adapters/pi/carried-requests.ts";
import { NOTHING_CARRIED } from "../../../machines/specification.ts";

let id = 0;
const entry = (data: unknown, customType = REQUESTS_ENTRY) =>
  ({ type: "custom", customType, data, id: `e${++id}`, parentId: null, timestamp: "" }) as unknown as SessionEntry;
const carried = (request: string, dropped = 0) => ({ interrupted: [{ request, added: ["and more"] }], dropped });

describe("carriedOnBranch", () => {
  it("reads this session's newest record; none means nothing carried", () => {
    expect(carriedOnBranch([], "s1")).toEqual(NOTHING_CARRIED);
    const branch = [entry({ ...carried("old"), sessionId: "s1" }), entry({ ...carried("new", 2), sessionId: "s1" })];
    expect(carriedOnBranch(branch, "s1")).toEqual(carried("new", 2));
  });

  it("skips another session's record (a fork's parent) and unreadable ones", () => {
    const branch = [
      entry({ ...carried("mine"), sessionId: "s1" }),
      entry({ ...carried("parent's"), sessionId: "s0" }),
      entry({ interrupted: [{ request: 3 }], dropped: 0, sessionId: "s1" }),
      entry({ interrupted: [], dropped: -1, sessionId: "s1" }),
      entry({ ...carried("other type"), sessionId: "s1" }, "state-flow"),
    ];
    expect(carriedOnBranch(branch, "s1")).toEqual(carried("mine"));
  });
});

describe("sameCarried", () => {
  it("compares the requests, their additions and the dropped count", () => {
    expect(sameCarried(carried("a"), carried("a"))).toBe(true);
    expect(sameCarried(carried("a"), carried("b"))).toBe(false);
    expect(sameCarried(carried("a"), carried("a", 1))).toBe(false);
    expect(sameCarried(NOTHING_CARRIED, { interrupted: [], dropped: 0 })).toBe(true);
  });
});
