CREATE TABLE "files" (
	"path" text PRIMARY KEY NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint,
	"sha256" text,
	"owner_kind" text NOT NULL,
	"owner_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
