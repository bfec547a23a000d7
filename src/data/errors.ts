import { PublicError } from "../lib/errors.ts";

/** A query the data layer refuses: answered as `data_provider_rejected` with the message. */
export class QueryRejected extends PublicError {
  override name = "QueryRejected";
  constructor(message: string, fields: Record<string, unknown> = {}) {
    super("data_provider_rejected", message, fields);
  }
}

/** A write an action tried that does not fit the schema; the action fails with this message. */
export class WriteRejected extends Error {
  override name = "WriteRejected";
}

/** A release's data schema that cannot be compiled; the message is for the person publishing it. */
export class SchemaError extends Error {
  override name = "SchemaError";
}
