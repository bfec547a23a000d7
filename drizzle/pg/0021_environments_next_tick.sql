ALTER TABLE "environments" ADD COLUMN "next_tick_at" bigint;--> statement-breakpoint
CREATE INDEX "environments_next_tick_idx" ON "environments" USING btree ("next_tick_at");--> statement-breakpoint
-- An environment whose active release has schedules: due now, so the first schedule pass (on any instance) runs it.
UPDATE "environments" SET "next_tick_at" = 0 WHERE EXISTS (
  SELECT 1 FROM "releases" r WHERE r."environment" = "environments"."id" AND r."version" = "environments"."active_version"
    AND jsonb_typeof(r."manifest" -> 'schedules') = 'array' AND jsonb_array_length(r."manifest" -> 'schedules') > 0
);