import type { Page, PublishAnswer, PublishedRelease, ReleaseContracts, ReleaseUpload } from "../wire/views.ts";
import { request, retried, searchOf, type Transport } from "./http.ts";

/** `client.releases`: the release history, publication and activation (service keys only). */
export const releasesResource = (transport: Transport) => ({
  list: (filter: { limit?: number; cursor?: string } = {}) =>
    retried<Page<PublishedRelease>>(transport, "GET", `/releases${searchOf(filter)}`),
  /** One published release with every action's contract, to compare two versions. */
  get: (version: string) => retried<ReleaseContracts>(transport, "GET", `/releases/${encodeURIComponent(version)}`),
  /**
   * Publishes a release built elsewhere (its bundle, as `buildRelease` or `release publish` makes it), and
   * activates it unless `activate: false`. Not retried: sent again, the same bundle answers `existing`.
   */
  publish: (upload: ReleaseUpload) =>
    request<PublishAnswer>(transport, "POST", "/releases", { body: upload }).then((r) => r.body),
  activate: (version: string) =>
    request<Record<string, unknown>>(transport, "POST", `/releases/${encodeURIComponent(version)}/activate`).then(
      (r) => r.body,
    ),
});
