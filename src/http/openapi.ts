import { Elysia } from "elysia";
import { describeRelease } from "../engine/describe.ts";
import type { Principal } from "../sdk/index.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";

/**
 * The document's modules, loaded with the first GET /openapi.json: the schemas and shared paths they build
 * are ~340 objects a server that is never asked for its document need not hold (idle memory is a budget).
 */
let documentModule: Promise<typeof import("./openapi-document.ts")> | null = null;
const openApiDocument = async (...args: Parameters<typeof import("./openapi-document.ts").openApiDocument>) => {
  documentModule ??= import("./openapi-document.ts");
  return (await documentModule).openApiDocument(...args);
};

/** GET /openapi.json and GET /describe: the active release for integrators and their tools, as the caller may know it. */
export const describeRoutes = (deps: HttpDeps & { handle: string }) => {
  const release = () => deps.engine.activeRelease();
  const known = (principal: Principal) => (release() ? deps.engine.actions(principal) : []);
  return new Elysia({ name: "describe" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/openapi.json", async ({ principal }) => {
      const current = release();
      return openApiDocument(
        { handle: deps.handle, publicUrl: deps.publicUrl() },
        current ? { version: current.version, description: current.manifest.description } : null,
        known(principal),
      );
    })
    .get("/describe", ({ principal }) => describeRelease(deps.handle, release(), principal));
};
