ALTER TABLE "instances" ADD COLUMN "beat_at" bigint;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "version" text;