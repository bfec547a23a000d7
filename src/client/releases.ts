import type { Page, PublishedRelease, ReleaseContracts } from "../wire/views.ts";
import { request, retried, searchOf, type Transport } from "./http.ts";

/** `client.releases`: the release history and activation (service keys only). */
export const releasesResource = (transport: Transport) => ({
  list: (filter: { limit?: number; cursor?: string } = {}) =>
    retried<Page<PublishedRelease>>(transport, "GET", `/releases${searchOf(filter)}`),
  /** One published release with every action's contract, to compare two versions. */
  get: (version: string) => retried<ReleaseContracts>(transport, "GET", `/releases/${encodeURIComponent(version)}`),
  activate: (version: string) =>
    request<Record<string, unknown>>(transport, "POST", `/releases/${encodeURIComponent(version)}/activate`).then(
      (r) => r.body,
    ),
});
