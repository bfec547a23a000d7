CREATE INDEX `files_owner_path_idx` ON `files` (`owner_kind`,`owner_id`,`path`);--> statement-breakpoint
CREATE INDEX `releases_created_idx` ON `releases` (`created_at`,`version`);