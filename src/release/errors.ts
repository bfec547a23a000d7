/** A release that cannot be built, loaded or published; the message is for the person publishing it. */
export class ReleaseError extends Error {
  override name = "ReleaseError";
}

/** A release that contradicts what is stored: its version holds other content, or it would orphan stored data. */
export class ReleaseConflict extends ReleaseError {
  override name = "ReleaseConflict";
}
