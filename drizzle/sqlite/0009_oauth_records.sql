CREATE TABLE `oauth_records` (
	`model` text NOT NULL,
	`id` text NOT NULL,
	`payload` text NOT NULL,
	`grant_id` text,
	`account_id` text,
	`uid` text,
	`user_code` text,
	`expires_at` integer,
	`consumed_at` integer,
	PRIMARY KEY(`model`, `id`)
);
--> statement-breakpoint
CREATE INDEX `oauth_records_grant_idx` ON `oauth_records` (`grant_id`);--> statement-breakpoint
CREATE INDEX `oauth_records_account_idx` ON `oauth_records` (`account_id`);--> statement-breakpoint
CREATE INDEX `oauth_records_uid_idx` ON `oauth_records` (`uid`);--> statement-breakpoint
CREATE INDEX `oauth_records_user_code_idx` ON `oauth_records` (`user_code`);