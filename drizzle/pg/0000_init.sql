CREATE TABLE "api_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"user_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint,
	CONSTRAINT "api_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "environment" (
	"id" integer PRIMARY KEY NOT NULL,
	"active_version" text,
	"revision" integer DEFAULT 0 NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "executions" (
	"id" text PRIMARY KEY NOT NULL,
	"request_id" text NOT NULL,
	"principal_kind" text NOT NULL,
	"principal_id" text NOT NULL,
	"action" text NOT NULL,
	"kind" text NOT NULL,
	"release_version" text NOT NULL,
	"contract_hash" text NOT NULL,
	"input_fingerprint" text NOT NULL,
	"input" jsonb NOT NULL,
	"status" text NOT NULL,
	"output" jsonb,
	"error_code" text,
	"error_message" text,
	"created_at" bigint NOT NULL,
	"started_at" bigint,
	"finished_at" bigint
);
--> statement-breakpoint
CREATE TABLE "releases" (
	"version" text PRIMARY KEY NOT NULL,
	"bundle_hash" text NOT NULL,
	"manifest" jsonb NOT NULL,
	"bundle" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "executions_request_uq" ON "executions" USING btree ("principal_kind","principal_id","request_id");--> statement-breakpoint
CREATE INDEX "executions_principal_id_idx" ON "executions" USING btree ("principal_kind","principal_id","id");