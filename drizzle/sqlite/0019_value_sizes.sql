-- Lists select by the sizes of inputs and outputs stored with them (issue #46), and SQLite reaches a
-- column stored after a large value only by reading that value's overflow pages: each table is rebuilt
-- with its values last, their sizes before them, so a list reads no value it leaves out. The rows keep
-- their rowids (the request-key index reads executions by rowid). This copies every row once.
CREATE TABLE `__new_executions` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`action` text NOT NULL,
	`kind` text NOT NULL,
	`release_version` text NOT NULL,
	`contract_hash` text NOT NULL,
	`input_fingerprint` text NOT NULL,
	`status` text NOT NULL,
	`error_code` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`instance` text,
	`scheduled_by` text,
	`input_bytes` integer NOT NULL,
	`output_bytes` integer,
	`error_message` text,
	`output` text,
	`input` text NOT NULL
);--> statement-breakpoint
INSERT INTO `__new_executions` (`rowid`, `id`, `request_id`, `principal_kind`, `principal_id`, `action`, `kind`,
  `release_version`, `contract_hash`, `input_fingerprint`, `status`, `error_code`, `created_at`, `started_at`,
  `finished_at`, `instance`, `scheduled_by`, `input_bytes`, `output_bytes`, `error_message`, `output`, `input`)
SELECT `rowid`, `id`, `request_id`, `principal_kind`, `principal_id`, `action`, `kind`, `release_version`,
  `contract_hash`, `input_fingerprint`, `status`, `error_code`, `created_at`, `started_at`, `finished_at`, `instance`,
  `scheduled_by`, octet_length(`input`), octet_length(`output`), `error_message`, `output`, `input`
FROM `executions`;--> statement-breakpoint
DROP TABLE `executions`;--> statement-breakpoint
ALTER TABLE `__new_executions` RENAME TO `executions`;--> statement-breakpoint
CREATE INDEX `executions_principal_id_idx` ON `executions` (`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
CREATE INDEX `executions_running_instance_idx` ON `executions` (`instance`) WHERE status = 'running';--> statement-breakpoint
CREATE INDEX `executions_finished_idx` ON `executions` (`finished_at`) WHERE finished_at is not null;--> statement-breakpoint
CREATE TABLE `__new_workflow_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`workflow` text NOT NULL,
	`release_version` text NOT NULL,
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`principal_claims` text,
	`status` text NOT NULL,
	`error_code` text,
	`cancel_requested` integer DEFAULT false NOT NULL,
	`lease_owner` text,
	`lease_expires_at` integer,
	`wake_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`input_bytes` integer NOT NULL,
	`output_bytes` integer,
	`error_message` text,
	`output` text,
	`input` text NOT NULL
);--> statement-breakpoint
INSERT INTO `__new_workflow_runs` (`rowid`, `id`, `request_id`, `workflow`, `release_version`, `principal_kind`,
  `principal_id`, `principal_claims`, `status`, `error_code`, `cancel_requested`, `lease_owner`, `lease_expires_at`,
  `wake_at`, `created_at`, `updated_at`, `finished_at`, `input_bytes`, `output_bytes`, `error_message`, `output`, `input`)
SELECT `rowid`, `id`, `request_id`, `workflow`, `release_version`, `principal_kind`, `principal_id`, `principal_claims`,
  `status`, `error_code`, `cancel_requested`, `lease_owner`, `lease_expires_at`, `wake_at`, `created_at`, `updated_at`,
  `finished_at`, octet_length(`input`), octet_length(`output`), `error_message`, `output`, `input`
FROM `workflow_runs`;--> statement-breakpoint
DROP TABLE `workflow_runs`;--> statement-breakpoint
ALTER TABLE `__new_workflow_runs` RENAME TO `workflow_runs`;--> statement-breakpoint
CREATE INDEX `workflow_runs_due_idx` ON `workflow_runs` (`wake_at`) WHERE status in ('queued', 'running', 'sleeping');--> statement-breakpoint
CREATE INDEX `workflow_runs_principal_id_idx` ON `workflow_runs` (`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
CREATE TABLE `__new_workflow_steps` (
	`run_id` text NOT NULL,
	`name` text NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`output_bytes` integer,
	`output` text,
	`error` text,
	PRIMARY KEY(`run_id`, `name`)
);--> statement-breakpoint
INSERT INTO `__new_workflow_steps` (`rowid`, `run_id`, `name`, `seq`, `kind`, `status`, `attempts`, `started_at`,
  `finished_at`, `output_bytes`, `output`, `error`)
SELECT `rowid`, `run_id`, `name`, `seq`, `kind`, `status`, `attempts`, `started_at`, `finished_at`,
  octet_length(`output`), `output`, `error`
FROM `workflow_steps`;--> statement-breakpoint
DROP TABLE `workflow_steps`;--> statement-breakpoint
ALTER TABLE `__new_workflow_steps` RENAME TO `workflow_steps`;
