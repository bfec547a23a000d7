import { Elysia } from "elysia";
import { PublicError } from "../lib/errors.ts";
import type { Instance } from "../wire/views.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";

/** The response header naming the instance that answered (exposed to pages by CORS). */
export const INSTANCE_HEADER = "x-actuate-instance";

export interface FleetDeps {
  /** This process as the other instances know it (`store.instances.id`): named on every response. */
  instance: string;
  /**
   * The live instances; null where the fleet is the service operator's (hosting mode's environments:
   * the apex answers it, to an operator key).
   */
  list: (() => Promise<Instance[]>) | null;
}

/** `GET /instances`: the server processes sharing the database, for a service key (an instance id names a host). */
export const instanceRoutes = (deps: HttpDeps & { fleet: FleetDeps }) =>
  new Elysia({ name: "instances" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/instances", async ({ principal }) => {
      const { list } = deps.fleet;
      if (list === null)
        throw new PublicError(
          "access_denied",
          "the instances are the service operator's: GET /instances on the service's own host, with an operator key",
        );
      if (principal.kind !== "service") throw new PublicError("access_denied", "GET /instances is for a service key");
      return { items: await list() };
    });
