ALTER TABLE `environments` ADD `next_tick_at` integer;--> statement-breakpoint
CREATE INDEX `environments_next_tick_idx` ON `environments` (`next_tick_at`);--> statement-breakpoint
-- An environment whose active release has schedules: due now, so the first schedule pass (on any instance) runs it.
UPDATE `environments` SET `next_tick_at` = 0 WHERE EXISTS (
  SELECT 1 FROM `releases` r WHERE r.`environment` = `environments`.`id` AND r.`version` = `environments`.`active_version`
    AND json_array_length(r.`manifest`, '$.schedules') > 0
);