CREATE TABLE "schedule_ticks" (
	"name" text PRIMARY KEY NOT NULL,
	"last_tick_at" bigint NOT NULL,
	"lease_owner" text,
	"lease_expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scheduled_invocations" (
	"id" text PRIMARY KEY NOT NULL,
	"principal_kind" text NOT NULL,
	"principal_id" text NOT NULL,
	"principal_claims" jsonb,
	"action" text NOT NULL,
	"input" jsonb NOT NULL,
	"request_id" text NOT NULL,
	"due_at" bigint NOT NULL,
	"scheduled_by" text NOT NULL,
	"status" text NOT NULL,
	"execution_id" text,
	"lease_owner" text,
	"lease_expires_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "scheduled_due_idx" ON "scheduled_invocations" USING btree ("due_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "scheduled_principal_id_idx" ON "scheduled_invocations" USING btree ("principal_kind","principal_id","id");