import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { checkPath } from "../files/paths.ts";
import { type FileService, MAX_EXPIRY_MS } from "../files/service.ts";
import { authenticated } from "./auth.ts";
import { checkedBody, MiB, readJsonBody } from "./body.ts";
import type { HttpDeps } from "./deps.ts";
import { badCursor, DEFAULT_PAGE, pageParams } from "./paging.ts";
import { queryString } from "./query-string.ts";
import { requestTarget } from "./request-target.ts";

const SIGN_BODY_LIMIT = 1 * MiB;

const SignUpload = Type.Object(
  {
    path: Type.String(),
    contentType: Type.String({ minLength: 1, maxLength: 255 }),
    /** Seconds. */
    expiresIn: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EXPIRY_MS / 1000 })),
  },
  { additionalProperties: false },
);

/** `?filename=<path>`: the path is checked by the file service (400 invalid_path). */
const FileQuery = queryString(Type.Object({ filename: Type.String() }, { additionalProperties: false }));

/** A page of files: `?prefix`, `?limit` and a cursor carrying the last path (up to 1024 bytes). */
const ListQuery = queryString(
  Type.Object(
    {
      prefix: Type.Optional(Type.String({ maxLength: 1024 })),
      limit: pageParams.limit,
      cursor: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9_-]{1,1400}$" })),
    },
    { additionalProperties: false },
  ),
);

const encodePathCursor = (path: string) => Buffer.from(path).toString("base64url");

function decodePathCursor(cursor: string): string {
  try {
    return checkPath(Buffer.from(cursor, "base64url").toString());
  } catch {
    throw badCursor();
  }
}

const contentTypeOf = (request: Request) => request.headers.get("content-type") ?? "application/octet-stream";
/** The Content-Length a sender declared, if any (Bun holds the body to it). */
const declaredLength = (request: Request) => {
  const header = request.headers.get("content-length");
  return header === null || !/^\d+$/.test(header) ? undefined : Number(header);
};
const emptyBody = () => new ReadableStream<Uint8Array>({ start: (c) => c.close() });

const SIGNED = "/storage/signed/";
/**
 * The grant as sent: all of the path after /storage/signed/, undecoded. The route's parameter would
 * take `<grant>/` for `<grant>`, and any text after the grant must make it fail to verify.
 */
const grantOf = (request: Request) => requestTarget(request).path.slice(SIGNED.length);

/** /storage: uploads streamed to the driver, signed URLs a browser can use without a credential, deletes. */
export const storageRoutes = (deps: HttpDeps & { files: FileService }) =>
  new Elysia({ name: "storage" })
    // Signed URLs authenticate by their own signature, so they sit outside the bearer guard.
    .put(`${SIGNED}:token`, async ({ request }) =>
      deps.files.signedUpload(grantOf(request), request.headers.get("content-type"), request.body ?? emptyBody()),
    )
    .get(`${SIGNED}:token`, async ({ request }) => {
      const file = await deps.files.signedDownload(grantOf(request));
      // A local file goes out by sendfile; anything else streams through.
      return new Response(file.file ?? file.body, {
        headers: { "content-type": file.contentType, "content-length": String(file.size) },
      });
    })
    .use(authenticated(deps.auth, deps.publicUrl))
    .put("/storage/upload", async ({ request, principal }) =>
      deps.files.upload(
        principal,
        request.headers.get("path"),
        contentTypeOf(request),
        request.body ?? emptyBody(),
        declaredLength(request),
      ),
    )
    .post("/storage/signed-upload-url", async ({ request, principal }) => {
      const { path, contentType, expiresIn } = checkedBody(SignUpload, await readJsonBody(request, SIGN_BODY_LIMIT));
      return deps.files.signUpload(
        principal,
        path,
        contentType,
        expiresIn === undefined ? undefined : expiresIn * 1000,
      );
    })
    .get(
      "/storage/signed-download-url",
      async ({ query, principal }) => deps.files.signDownload(principal, query.filename),
      { query: FileQuery },
    )
    .get(
      "/storage/files",
      async ({ query: q, principal }) => {
        const page = await deps.files.list(principal, {
          prefix: q.prefix ?? "",
          afterPath: q.cursor === undefined ? undefined : decodePathCursor(q.cursor),
          limit: q.limit ?? DEFAULT_PAGE,
        });
        return { items: page.items, nextCursor: page.lastPath === null ? null : encodePathCursor(page.lastPath) };
      },
      { query: ListQuery },
    )
    .delete(
      "/storage/files",
      async ({ query, principal }) => {
        await deps.files.delete(principal, query.filename);
        return { ok: true };
      },
      { query: FileQuery },
    );
