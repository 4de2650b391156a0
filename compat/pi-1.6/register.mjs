// Node resolution hook for running the project's scripts (the demo) on Pi 1.6.0: bare imports of
// Pi's packages resolve from this folder's install instead of the project's Pi 0.84.4. Use with
// `node --import ./compat/pi-1.6/register.mjs …`; the tests set it up through tests/support/pi-version.ts.
import { register } from "node:module";

register("./resolve-hook.mjs", import.meta.url);
