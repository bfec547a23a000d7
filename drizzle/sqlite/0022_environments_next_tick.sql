ALTER TABLE `environments` ADD `next_tick_at` integer;--> statement-breakpoint
CREATE INDEX `environments_next_tick_idx` ON `environments` (`next_tick_at`);--> statement-breakpoint
-- An environment with an active release may have schedules: the first pass (on any instance) finds out.
UPDATE `environments` SET `next_tick_at` = 0 WHERE `active_version` IS NOT NULL;