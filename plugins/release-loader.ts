import { registerReleaseLoader } from "../src/release/loader.ts";

// Preloaded by bunfig.toml, so `bun test` and `bun src/cli/main.ts` link bundles to the SDK from the start.
registerReleaseLoader();
