CREATE TABLE `data_attrs` (
	`id` text PRIMARY KEY NOT NULL,
	`entity` text NOT NULL,
	`label` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `data_attrs_entity_label_uq` ON `data_attrs` (`entity`,`label`);--> statement-breakpoint
CREATE TABLE `data_entities` (
	`id` text PRIMARY KEY NOT NULL,
	`entity` text NOT NULL,
	`doc` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `data_entities_entity_idx` ON `data_entities` (`entity`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `data_links` (
	`link` text NOT NULL,
	`source_id` text NOT NULL,
	`target_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`link`, `source_id`, `target_id`)
);
--> statement-breakpoint
CREATE INDEX `data_links_target_idx` ON `data_links` (`link`,`target_id`);