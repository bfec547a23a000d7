CREATE TABLE "workflow_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"request_id" text NOT NULL,
	"workflow" text NOT NULL,
	"release_version" text NOT NULL,
	"principal_kind" text NOT NULL,
	"principal_id" text NOT NULL,
	"input" jsonb NOT NULL,
	"status" text NOT NULL,
	"output" jsonb,
	"error_code" text,
	"error_message" text,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"lease_owner" text,
	"lease_expires_at" bigint,
	"wake_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint
);
--> statement-breakpoint
CREATE TABLE "workflow_steps" (
	"run_id" text NOT NULL,
	"name" text NOT NULL,
	"seq" integer NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer NOT NULL,
	"output" jsonb,
	"error" text,
	"started_at" bigint,
	"finished_at" bigint,
	CONSTRAINT "workflow_steps_run_id_name_pk" PRIMARY KEY("run_id","name")
);
--> statement-breakpoint
CREATE INDEX "workflow_runs_due_idx" ON "workflow_runs" USING btree ("wake_at") WHERE status in ('queued', 'running', 'sleeping');