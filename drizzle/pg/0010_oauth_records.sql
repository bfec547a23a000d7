CREATE TABLE "oauth_records" (
	"model" text NOT NULL,
	"id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"grant_id" text,
	"account_id" text,
	"uid" text,
	"user_code" text,
	"expires_at" bigint,
	"consumed_at" bigint,
	CONSTRAINT "oauth_records_model_id_pk" PRIMARY KEY("model","id")
);
--> statement-breakpoint
CREATE INDEX "oauth_records_grant_idx" ON "oauth_records" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "oauth_records_account_idx" ON "oauth_records" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "oauth_records_uid_idx" ON "oauth_records" USING btree ("uid");--> statement-breakpoint
CREATE INDEX "oauth_records_user_code_idx" ON "oauth_records" USING btree ("user_code");