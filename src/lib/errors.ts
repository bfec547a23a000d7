/**
 * Every public error code and the HTTP status it is answered with. This is the one table: HTTP answers
 * `{ ok:false, error: code, message, … }` with this status, MCP a tool error `{ error: code, message, … }`,
 * the /session socket `error { status, error: code, message }` with this status. A code that is not
 * here cannot be thrown (PublicError takes only these).
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  action_contract_validation_failed: 400,
  data_provider_rejected: 400,
  invalid_path: 400,
  // The control API (hosting mode's apex): a handle that is not a DNS label.
  invalid_handle: 400,
  // An MCP tool cannot take files; over HTTP they are sent as multipart, so HTTP never answers this.
  execution_files_required: 400,
  // A variable's name, value or size refused (a secret shorter than 8 characters).
  invalid_variable: 400,
  unauthorized: 401,
  access_denied: 403,
  signed_url_invalid: 403,
  signed_url_expired: 403,
  signed_url_used: 403,
  not_found: 404,
  action_not_found: 404,
  execution_not_found: 404,
  run_not_found: 404,
  file_not_found: 404,
  scheduled_not_found: 404,
  release_not_found: 404,
  sign_in_not_found: 404,
  // Hosting mode: no environment has the request's host (or it is outside the service's domain).
  environment_not_found: 404,
  // The control API: no organization of that handle (or not the caller's), no such key or grant there.
  organization_not_found: 404,
  key_not_found: 404,
  grant_not_found: 404,
  variable_not_found: 404,
  method_not_allowed: 405,
  REQUEST_CONFLICT: 409,
  run_not_cancelable: 409,
  scheduled_not_cancelable: 409,
  release_conflict: 409,
  // The control API: an organization's or environment's handle in use; a delete sent without ?confirm=true.
  handle_taken: 409,
  confirmation_required: 409,
  // A release whose required variables are unset in the environment is not activated (`missing` names them).
  variables_missing: 409,
  // A secret set on a server with no SECRETS_KEY.
  secrets_key_required: 409,
  // A fork of an environment whose active release declares secrets, asked for without copying them.
  secrets_required: 409,
  payload_too_large: 413,
  // Hosting mode: the environment exists, but SERVE_ENVIRONMENTS leaves it to other instances.
  environment_not_served: 421,
  upgrade_required: 426,
  // A live-query limit (LIVE_MAX_*) on the /session socket.
  limit_reached: 429,
  internal_error: 500,
  no_active_release: 503,
  database_unavailable: 503,
  execution_result_timeout: 504,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * A refusal the caller can act on, thrown by any layer: a public `code`, a message for the caller, and
 * `fields` the answer carries besides them (`details.issues`, `executionId`, …). Adapters answer it
 * through ERROR_STATUS; anything thrown that is not a PublicError is a bug (a 500 over HTTP).
 */
export class PublicError extends Error {
  override name = "PublicError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** The message of anything thrown. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
