import type { Authenticator } from "../auth/authenticator.ts";
import type { Engine } from "../engine/engine.ts";
import type { Log } from "../observe/log.ts";

export interface HttpDeps {
  engine: Engine;
  auth: Authenticator;
  /** The externally visible base URL; a function because it is known only once the port is bound. */
  publicUrl: () => string;
  log: Log;
}
