CREATE TABLE `execution_requests` (
	`principal_kind` text NOT NULL,
	`principal_id` text NOT NULL,
	`request_id` text NOT NULL,
	`execution_id` text NOT NULL,
	PRIMARY KEY(`principal_kind`, `principal_id`, `request_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `execution_requests_merged` (
	`id` integer PRIMARY KEY NOT NULL,
	`through` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `execution_requests` (`principal_kind`, `principal_id`, `request_id`, `execution_id`)
	SELECT `principal_kind`, `principal_id`, `request_id`, `id` FROM `executions`
	ORDER BY `principal_kind`, `principal_id`, `request_id`;
--> statement-breakpoint
DROP INDEX `executions_request_uq`;
--> statement-breakpoint
INSERT INTO `execution_requests_merged` (`id`, `through`) VALUES (1, coalesce((SELECT max(`id`) FROM `executions`), ''));
