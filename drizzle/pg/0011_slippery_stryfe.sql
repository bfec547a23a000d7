CREATE TABLE "schedule_ticks" (
	"name" text PRIMARY KEY NOT NULL,
	"last_tick_at" bigint NOT NULL,
	"lease_owner" text,
	"lease_expires_at" bigint NOT NULL
);
