/** A query the data layer refuses: answered as `data_provider_rejected` with the message, status 400. */
export class QueryRejected extends Error {
  override name = "QueryRejected";
}

/** A write an action tried that does not fit the schema; the action fails with this message. */
export class WriteRejected extends Error {
  override name = "WriteRejected";
}
