/**
 * How a stored release bundle refers to the SDK. The builder marks every `import … from "actuate"`
 * external under this specifier; the loader plugin (plugins/release-loader.ts) links it to the SDK of
 * the runtime that loads the bundle, so a bundle never carries its own copy of the SDK.
 */
export const SDK_SPECIFIER = "actuate:sdk";

/** Bundles are cached on disk as `<dir>/bundles/<sha256>.js`; the loader plugin claims exactly those files. */
export const BUNDLE_FILE_PATTERN = /[\\/]bundles[\\/][0-9a-f]{64}\.js$/;

export const sdkEntryPath = new URL("../sdk/index.ts", import.meta.url).pathname;
