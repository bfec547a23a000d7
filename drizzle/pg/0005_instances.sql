CREATE TABLE "instances" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "instance" text;--> statement-breakpoint
CREATE INDEX "executions_running_instance_idx" ON "executions" USING btree ("instance") WHERE status = 'running';