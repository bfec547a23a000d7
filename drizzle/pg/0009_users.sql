CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"password_hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"disabled_at" bigint
);
