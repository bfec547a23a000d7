CREATE TABLE `api_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`user_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_tokens_token_hash_unique` ON `api_tokens` (`token_hash`);--> statement-breakpoint
CREATE TABLE `environment` (
	`id` integer PRIMARY KEY NOT NULL,
	`active_version` text,
	`revision` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `executions` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`action` text NOT NULL,
	`kind` text NOT NULL,
	`release_version` text NOT NULL,
	`contract_hash` text NOT NULL,
	`input_fingerprint` text NOT NULL,
	`input` text NOT NULL,
	`status` text NOT NULL,
	`output` text,
	`error_code` text,
	`error_message` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `executions_request_uq` ON `executions` (`principal_kind`,`principal_id`,`request_id`);--> statement-breakpoint
CREATE INDEX `executions_principal_id_idx` ON `executions` (`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
CREATE TABLE `releases` (
	`version` text PRIMARY KEY NOT NULL,
	`bundle_hash` text NOT NULL,
	`manifest` text NOT NULL,
	`bundle` text NOT NULL,
	`created_at` integer NOT NULL
);
