-- Followers of an execution on other instances hear its status changes at once (they LISTEN on
-- actuate_execution_changes). A statement-level trigger, so every writer notifies without knowing it
-- (the settlement batch, a workflow run's end, a cancel, the interrupted sweep), once per statement:
-- the ids go comma-separated, 150 a message (a payload must stay under 8000 bytes).
CREATE FUNCTION "actuate_notify_execution_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('actuate_execution_changes', string_agg(id, ','))
    FROM (SELECT id, (row_number() OVER ()) / 150 AS chunk FROM changed) AS numbered
    GROUP BY chunk;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "executions_notify_changes" AFTER UPDATE ON "executions"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "actuate_notify_execution_changes"();
