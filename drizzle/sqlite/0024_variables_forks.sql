CREATE TABLE `variables` (
	`environment` integer DEFAULT 1 NOT NULL,
	`name` text NOT NULL,
	`secret` integer DEFAULT false NOT NULL,
	`value` text NOT NULL,
	`key_id` text,
	`updated_at` integer NOT NULL,
	`updated_by` text,
	PRIMARY KEY(`environment`, `name`)
);
--> statement-breakpoint
CREATE INDEX `variables_key_idx` ON `variables` (`key_id`);--> statement-breakpoint
ALTER TABLE `environments` ADD `forked_from` text;--> statement-breakpoint
ALTER TABLE `environments` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `environments` ADD `schedules_paused` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `environments_expires_idx` ON `environments` (`expires_at`);--> statement-breakpoint
ALTER TABLE `files` ADD `blob_environment` integer;--> statement-breakpoint
CREATE INDEX `files_blob_idx` ON `files` (`blob_environment`,`path`);