import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import type { ReleaseAdmin, ReleaseKey } from "../engine/releases.ts";
import { RELEASE_VERSION } from "../release/activate.ts";
import { authenticated } from "./auth.ts";
import { checkedBody, readJsonBody } from "./body.ts";
import type { HttpDeps } from "./deps.ts";
import { badCursor, DEFAULT_PAGE, pageParams } from "./paging.ts";
import { queryString } from "./query-string.ts";

const ListQuery = queryString(Type.Object(pageParams, { additionalProperties: false }));

const Label = Type.String({ minLength: 1, maxLength: 256 });

/** `POST /releases`: a release the CLI built (see ReleaseUpload), never its source. */
const ReleaseUploadBody = Type.Object(
  {
    bundle: Type.String({ minLength: 1 }),
    defaultVersion: Label,
    version: Type.Optional(Type.String({ pattern: RELEASE_VERSION.source })),
    force: Type.Optional(Type.Boolean()),
    activate: Type.Optional(Type.Boolean()),
    publishedBy: Type.Optional(Label),
  },
  { additionalProperties: false },
);

// The history's cursor: the publication time and version of the last release of the page.
const encodeReleaseCursor = (key: ReleaseKey) => Buffer.from(`${key.createdAt}:${key.version}`).toString("base64url");

function decodeReleaseCursor(cursor: string): ReleaseKey {
  const match = /^(\d{1,15}):(.+)$/.exec(Buffer.from(cursor, "base64url").toString());
  if (!match || !RELEASE_VERSION.test(match[2] as string)) {
    throw badCursor();
  }
  return { createdAt: Number(match[1]), version: match[2] as string };
}

/**
 * `GET /releases` (the history, newest first), `POST /releases` (publish a built release),
 * `GET /releases/{version}` (one, with its contracts) and `POST /releases/{version}/activate`: service keys only.
 */
export const releaseRoutes = (deps: HttpDeps & { releases: ReleaseAdmin; maxReleaseBytes: number }) =>
  new Elysia({ name: "releases" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get(
      "/releases",
      async ({ query: q, principal }) => {
        const page = await deps.releases.history(principal, {
          limit: q.limit ?? DEFAULT_PAGE,
          after: q.cursor === undefined ? undefined : decodeReleaseCursor(q.cursor),
        });
        return { items: page.items, nextCursor: page.next ? encodeReleaseCursor(page.next) : null };
      },
      { query: ListQuery },
    )
    .post("/releases", ({ request, principal }) =>
      deps.releases.publish(principal, async () =>
        checkedBody(ReleaseUploadBody, await readJsonBody(request, deps.maxReleaseBytes)),
      ),
    )
    .get("/releases/:version", ({ params, principal }) => deps.releases.published(principal, params.version))
    .post("/releases/:version/activate", ({ params, principal }) => deps.releases.activate(principal, params.version));
