import { writeFileSync } from "node:fs";
import { protocolModel } from "./tests/support/pi-profile.ts";
import { startScriptedServer } from "./tests/support/scripted-server.ts";
const server = await startScriptedServer(protocolModel);
writeFileSync("/tmp/t40/server.url", server.baseUrl);
setInterval(() => writeFileSync("/tmp/t40/requests.json", JSON.stringify(server.requests.length)), 500);
