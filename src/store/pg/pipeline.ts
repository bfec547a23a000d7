import type { ReservedSql, Row, Sql } from "postgres";
import { isDatabaseUnavailable } from "../../lib/database-errors.ts";

/** How a pipeline ended: every statement's rows, or the first failure (a statement's, or the connection's). */
export type PipelineOutcome = { results: Row[][] } | { failure: unknown };

/**
 * How long a reservation may wait for its connection. postgres-js forgets a reservation whose new
 * connection is cut while it is being set up (it is handed to the next connection as its first query,
 * which drops it), so a wait without end would hold its lane for ever. Twice the connect timeout.
 */
const RESERVE_WAIT_MS = 10_000;

/**
 * Sends statements pipelined on one reserved connection (one socket write, one round trip) and gives
 * the connection back. When the connection is lost under them, postgres-js 3.4.9 never answers the
 * statements still queued behind the failed one, and releasing the connection puts it, socketless, back
 * among the open ones, where the next query fails or ends the process (porsager/postgres#1208). So the
 * first statement failing for a lost connection answers for the whole pipeline, and the connection is
 * not released: the pool has taken it back already, to reconnect. Throws when no connection can be
 * reserved (the database cannot be reached).
 */
export async function pipelined(
  client: Sql,
  statements: (connection: ReservedSql) => Promise<Row[]>[],
): Promise<PipelineOutcome> {
  const connection = await reserve(client);
  if (connection === null) return { failure: reservationLost() };
  const sent = statements(connection);
  const lostTo: unknown[] = [];
  const lost = new Promise<null>((resolve) => {
    for (const statement of sent) {
      statement.catch((error) => {
        if (!isDatabaseUnavailable(error)) return;
        lostTo.push(error);
        resolve(null);
      });
    }
  });
  // The handlers above run before allSettled's: whichever wins, a lost connection is known here.
  const settled = await Promise.race([Promise.allSettled(sent), lost]);
  if (lostTo.length > 0) return { failure: lostTo[0] };
  connection.release();
  const outcomes = settled as PromiseSettledResult<Row[]>[];
  const rejected = outcomes.find((o) => o.status === "rejected");
  if (rejected) return { failure: rejected.reason };
  return { results: outcomes.map((o) => (o as PromiseFulfilledResult<Row[]>).value) };
}

/** A reserved connection; null when none came within RESERVE_WAIT_MS (one granted later is given back at once). */
async function reserve(client: Sql): Promise<ReservedSql | null> {
  const reservation = client.reserve();
  let timer: Timer | undefined;
  const givenUp = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), RESERVE_WAIT_MS);
  });
  try {
    const connection = await Promise.race([reservation, givenUp]);
    if (connection === null)
      reservation.then(
        (late) => late.release(),
        () => {},
      );
    return connection;
  } finally {
    clearTimeout(timer);
  }
}

const reservationLost = () =>
  Object.assign(new Error(`no connection could be reserved within ${RESERVE_WAIT_MS / 1000} s`), {
    code: "CONNECT_TIMEOUT",
  });
