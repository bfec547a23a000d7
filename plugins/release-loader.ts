import { plugin } from "bun";
import { BUNDLE_FILE_PATTERN, SDK_SPECIFIER, sdkEntryPath } from "../src/release/bundle-format.ts";

// Preloaded by bunfig.toml and imported again by the loader: registering twice would link twice.
const installed = Symbol.for("actuate.release-loader");
const registry = globalThis as { [installed]?: true };

if (!registry[installed]) {
  registry[installed] = true;
  plugin({
    name: "actuate-release-loader",
    setup(build) {
      // Runtime onResolve does not fire for bare specifiers in Bun 1.4 (oven-sh/bun#40579), so the
      // bundle's SDK import is linked where the bundle is loaded.
      build.onLoad({ filter: BUNDLE_FILE_PATTERN }, async ({ path }) => {
        const source = await Bun.file(path).text();
        return {
          contents: source.replaceAll(JSON.stringify(SDK_SPECIFIER), JSON.stringify(sdkEntryPath)),
          loader: "js",
        };
      });
    },
  });
}
