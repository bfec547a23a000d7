CREATE TABLE `workflow_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`workflow` text NOT NULL,
	`release_version` text NOT NULL,
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`input` text NOT NULL,
	`status` text NOT NULL,
	`output` text,
	`error_code` text,
	`error_message` text,
	`cancel_requested` integer DEFAULT false NOT NULL,
	`lease_owner` text,
	`lease_expires_at` integer,
	`wake_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `workflow_runs_due_idx` ON `workflow_runs` (`wake_at`) WHERE status in ('queued', 'running', 'sleeping');--> statement-breakpoint
CREATE TABLE `workflow_steps` (
	`run_id` text NOT NULL,
	`name` text NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`output` text,
	`error` text,
	`started_at` integer,
	`finished_at` integer,
	PRIMARY KEY(`run_id`, `name`)
);
