import type { ServerWebSocket } from "bun";
import { Elysia } from "elysia";
import { type Authenticator, bearerToken } from "../auth/authenticator.ts";
import type { Login, SessionHub } from "../live/session.ts";
import { unauthorized } from "./auth.ts";
import { errorResponse } from "./errors.ts";

type Session = ReturnType<SessionHub["open"]>;

export interface SessionRouteOptions {
  hub: SessionHub;
  auth: Authenticator;
  publicUrl: () => string;
}

/**
 * GET /session: the live-query WebSocket. A bearer `Authorization` header on the upgrade signs the
 * socket in (a refused one is 401 before the upgrade); browsers, which cannot set headers, sign in with
 * the `init` message. Elysia hands over JSON already parsed and anything else as the string sent; the
 * hub answers the latter with a protocol error and keeps the socket open.
 */
export const sessionRoutes = ({ hub, auth, publicUrl }: SessionRouteOptions) => {
  const sessions = new WeakMap<object, Session>();
  return new Elysia({ name: "session" })
    .derive(async ({ request }) => ({ headerLogin: await headerLogin(request, auth, publicUrl) }))
    .ws("/session", {
      open(ws) {
        const socket = {
          // Bun answers the bytes sent, -1 when they wait behind unread ones, 0 when it dropped them.
          send: (m: string) => ws.send(m) !== 0,
          // Bun's socket; Elysia's own type of it leaves this method out.
          unsentBytes: () => (ws.raw as unknown as ServerWebSocket).getBufferedAmount(),
          close: (code: number, reason: string) => ws.close(code, reason),
        };
        sessions.set(ws.raw, hub.open(socket, ws.data.headerLogin));
      },
      drain(ws) {
        const session = sessions.get(ws.raw);
        if (session) hub.drained(session);
      },
      async message(ws, message) {
        const session = sessions.get(ws.raw);
        if (session) await hub.message(session, message);
      },
      close(ws) {
        const session = sessions.get(ws.raw);
        if (session) hub.close(session);
      },
      // An upgrade answers nothing and a refusal is already ours (a Response); anything else is Elysia's
      // plain-text 400 for a handshake Bun refused.
      mapResponse: ({ responseValue }) =>
        responseValue === undefined || responseValue instanceof Response
          ? undefined
          : errorResponse("invalid_request", "not a valid WebSocket upgrade (RFC 6455 handshake headers)"),
    });
};

/**
 * The caller a bearer `Authorization` header names; null without one. A header of another scheme is not
 * ours to judge (a browser replays a proxy's Basic credentials on the upgrade) and is left alone.
 */
async function headerLogin(request: Request, auth: Authenticator, publicUrl: () => string): Promise<Login | null> {
  const token = bearerToken(request.headers.get("authorization"));
  if (token === null) return null;
  const principal = await auth.resolveToken(token);
  if (!principal) throw unauthorized(publicUrl(), "invalid_token");
  return { token, principal };
}
