// The durable-write floor's row on PostgreSQL, shared by bench/invoke-floor.ts (the floor server) and
// bench/pg-write-shapes.ts: what an execution record needs at least, a batch inserted from JSON text
// ($1: `[{ id, requestId, input }, …]`).
export const PG_FLOOR_TABLE =
  "CREATE TABLE IF NOT EXISTS floor_executions (id text PRIMARY KEY, request_id text NOT NULL, input jsonb NOT NULL)";
export const PG_FLOOR_INSERT = `INSERT INTO floor_executions (id, request_id, input)
  SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS r(id text, "requestId" text, input jsonb)`;
