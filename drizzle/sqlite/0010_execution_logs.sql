CREATE TABLE `execution_logs` (
	`execution_id` text NOT NULL,
	`seq` integer NOT NULL,
	`at` integer NOT NULL,
	`level` text NOT NULL,
	`step` text,
	`line` text NOT NULL,
	PRIMARY KEY(`execution_id`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `executions_finished_idx` ON `executions` (`finished_at`) WHERE finished_at is not null;