ALTER TABLE "files" ADD COLUMN "execution_id" text;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "field" text;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "filename" text;--> statement-breakpoint
CREATE INDEX "files_execution_idx" ON "files" USING btree ("execution_id");