/**
 * How a stored release bundle refers to the SDK. The builder marks every `import … from "actuate"`
 * external under this specifier; the release loader (release/loader.ts) serves it as a virtual
 * module holding the runtime's own SDK, so a bundle never carries its own copy of the SDK.
 */
export const SDK_SPECIFIER = "actuate:sdk";

/** Bundles are cached on disk as `<DATA_DIR>/bundles/<sha256>.js`. */
export const BUNDLE_FILE_PATTERN = /[\\/]bundles[\\/][0-9a-f]{64}\.js$/;
