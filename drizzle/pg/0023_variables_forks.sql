CREATE TABLE "variables" (
	"environment" integer DEFAULT 1 NOT NULL,
	"name" text NOT NULL,
	"secret" boolean DEFAULT false NOT NULL,
	"value" text NOT NULL,
	"key_id" text,
	"updated_at" bigint NOT NULL,
	"updated_by" text,
	CONSTRAINT "variables_environment_name_pk" PRIMARY KEY("environment","name")
);
--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "forked_from" text;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "schedules_paused" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "blob_environment" integer;--> statement-breakpoint
CREATE INDEX "variables_key_idx" ON "variables" USING btree ("key_id");--> statement-breakpoint
CREATE INDEX "environments_expires_idx" ON "environments" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "files_blob_idx" ON "files" USING btree ("blob_environment","path");