import type { SignIn } from "../wire/views.ts";
import { request, retried, searchOf, type Transport } from "./http.ts";

/** `client.signIns`: the apps signed in as the caller through the built-in sign-in (a service key: one `user`'s, or everyone's). */
export const signInsResource = (transport: Transport) => ({
  list: (filter: { user?: string } = {}) =>
    retried<{ items: SignIn[] }>(transport, "GET", `/sign-ins${searchOf(filter)}`).then((body) => body.items),
  /** Ends one: the app's refresh tokens at once, its access tokens within the server's TOKEN_RECHECK_MS. */
  revoke: (id: string) =>
    request<SignIn>(transport, "DELETE", `/sign-ins/${encodeURIComponent(id)}`).then((r) => r.body),
});
