import { plugin } from "bun";
import * as sdk from "../sdk/index.ts";
import { SDK_SPECIFIER } from "./bundle-format.ts";

let registered = false;

/**
 * Serves `actuate:sdk` to stored bundles: the runtime's own SDK, as a virtual module rather than a file
 * path, since inside a compiled binary the SDK is not a file a bundle could import. Registered by the
 * release loader before it imports a bundle (a compiled binary reads no bunfig.toml) and by the preload
 * of plugins/release-loader.ts; once per process, whichever comes first.
 */
export function registerReleaseLoader(): void {
  if (registered) return;
  registered = true;
  // No onLoad hook here: with one registered, Bun 1.4.5 skipped the migrations macro of store/*/open.ts
  // ("readMigrations is not defined" at start-up).
  plugin({
    name: "actuate-release-loader",
    setup(build) {
      build.module(SDK_SPECIFIER, () => ({ exports: sdk, loader: "object" }));
    },
  });
}
