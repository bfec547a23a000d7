CREATE TABLE `instances` (
	`id` text PRIMARY KEY NOT NULL,
	`started_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `executions` ADD `instance` text;--> statement-breakpoint
CREATE INDEX `executions_running_instance_idx` ON `executions` (`instance`) WHERE status = 'running';