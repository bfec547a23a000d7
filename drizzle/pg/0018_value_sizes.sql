-- Lists select by the sizes of inputs and outputs stored with them, instead of printing each jsonb
-- to measure it (issue #46). Rows written before get theirs here: every value is printed once, and
-- every row gets a new version (the values' TOAST is kept, not rewritten). The trigger that tells
-- followers of status changes is off meanwhile: no status changes.
ALTER TABLE "executions" ADD COLUMN "input_bytes" integer;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "output_bytes" integer;--> statement-breakpoint
ALTER TABLE "executions" DISABLE TRIGGER "executions_notify_changes";--> statement-breakpoint
UPDATE "executions" SET "input_bytes" = octet_length("input"::text), "output_bytes" = octet_length("output"::text);--> statement-breakpoint
ALTER TABLE "executions" ENABLE TRIGGER "executions_notify_changes";--> statement-breakpoint
ALTER TABLE "executions" ALTER COLUMN "input_bytes" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "workflow_runs" ADD COLUMN "input_bytes" integer;--> statement-breakpoint
ALTER TABLE "workflow_runs" ADD COLUMN "output_bytes" integer;--> statement-breakpoint
UPDATE "workflow_runs" SET "input_bytes" = octet_length("input"::text), "output_bytes" = octet_length("output"::text);--> statement-breakpoint
ALTER TABLE "workflow_runs" ALTER COLUMN "input_bytes" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "workflow_steps" ADD COLUMN "output_bytes" integer;--> statement-breakpoint
UPDATE "workflow_steps" SET "output_bytes" = octet_length("output"::text);
