CREATE TABLE `schedule_ticks` (
	`name` text PRIMARY KEY NOT NULL,
	`last_tick_at` integer NOT NULL,
	`lease_owner` text,
	`lease_expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `scheduled_invocations` (
	`id` text PRIMARY KEY NOT NULL,
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`principal_claims` text,
	`action` text NOT NULL,
	`input` text NOT NULL,
	`request_id` text NOT NULL,
	`due_at` integer NOT NULL,
	`scheduled_by` text NOT NULL,
	`status` text NOT NULL,
	`execution_id` text,
	`lease_owner` text,
	`lease_expires_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `scheduled_due_idx` ON `scheduled_invocations` (`due_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `scheduled_principal_id_idx` ON `scheduled_invocations` (`principal_kind`,`principal_id`,`id`);