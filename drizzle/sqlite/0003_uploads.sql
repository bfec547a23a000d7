ALTER TABLE `files` ADD `execution_id` text;--> statement-breakpoint
ALTER TABLE `files` ADD `field` text;--> statement-breakpoint
ALTER TABLE `files` ADD `filename` text;--> statement-breakpoint
CREATE INDEX `files_execution_idx` ON `files` (`execution_id`);