import { Elysia } from "elysia";
import type { SessionHub } from "../live/session.ts";
import { errorResponse } from "./errors.ts";

type Session = ReturnType<SessionHub["open"]>;

/**
 * GET /session: the live-query WebSocket. Authentication is the `init` message (browsers cannot set
 * headers). Elysia hands over JSON already parsed and anything else as the string sent; the hub
 * answers the latter with a protocol error and keeps the socket open.
 */
export const sessionRoutes = (hub: SessionHub) => {
  const sessions = new WeakMap<object, Session>();
  return new Elysia({ name: "session" }).ws("/session", {
    open(ws) {
      sessions.set(ws.raw, hub.open({ send: (m) => ws.send(m), close: (code, reason) => ws.close(code, reason) }));
    },
    async message(ws, message) {
      const session = sessions.get(ws.raw);
      if (session) await hub.message(session, message);
    },
    close(ws) {
      const session = sessions.get(ws.raw);
      if (session) hub.close(session);
    },
    // An upgrade answers nothing; anything else is Elysia's plain-text 400 for a handshake Bun refused.
    mapResponse: ({ responseValue }) =>
      responseValue === undefined
        ? undefined
        : errorResponse("invalid_request", "not a valid WebSocket upgrade (RFC 6455 handshake headers)"),
  });
};
