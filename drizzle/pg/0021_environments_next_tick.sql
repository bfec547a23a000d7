ALTER TABLE "environments" ADD COLUMN "next_tick_at" bigint;--> statement-breakpoint
CREATE INDEX "environments_next_tick_idx" ON "environments" USING btree ("next_tick_at");--> statement-breakpoint
-- An environment with an active release may have schedules: the first pass (on any instance) finds out.
UPDATE "environments" SET "next_tick_at" = 0 WHERE "active_version" IS NOT NULL;