/** A release that cannot be built, loaded or published; the message is for the person publishing it. */
export class ReleaseError extends Error {
  override name = "ReleaseError";
}
