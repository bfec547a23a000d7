import { expect } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";

/** The configuration `env` gives (DATA_DIR pointed at a folder nothing writes to). */
export const loadSettings = (env: Record<string, string>) => loadConfig({ DATA_DIR: "/tmp/actuate-unused", ...env });

/** The message of the ConfigError `env` is refused with; fails when it is accepted. */
export function refusalOf(env: Record<string, string>): string {
  try {
    loadSettings(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("the configuration was accepted");
}
