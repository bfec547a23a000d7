import { plugin } from "bun";
import { SDK_SPECIFIER } from "../src/release/bundle-format.ts";
import * as sdk from "../src/sdk/index.ts";

// A virtual module rather than a file path: inside a compiled binary the SDK is not a file a bundle could import.
// No onLoad hook here: with one registered, Bun 1.4.5 skipped the migrations macro of store/*/open.ts
// ("readMigrations is not defined" at start-up).
plugin({
  name: "actuate-release-loader",
  setup(build) {
    build.module(SDK_SPECIFIER, () => ({ exports: sdk, loader: "object" }));
  },
});
