ALTER TABLE `instances` ADD `beat_at` integer;--> statement-breakpoint
ALTER TABLE `instances` ADD `version` text;