CREATE TABLE `environments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`handle` text,
	`organization` integer,
	`active_version` text,
	`revision` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`changed` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `environments_handle_unique` ON `environments` (`handle`);--> statement-breakpoint
CREATE INDEX `environments_changed_idx` ON `environments` (`changed`);--> statement-breakpoint
CREATE INDEX `environments_organization_idx` ON `environments` (`organization`);--> statement-breakpoint
CREATE TABLE `grants` (
	`user_id` text NOT NULL,
	`organization` integer NOT NULL,
	`environment` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`user_id`, `organization`, `environment`)
);
--> statement-breakpoint
CREATE INDEX `grants_organization_idx` ON `grants` (`organization`,`environment`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` integer PRIMARY KEY NOT NULL,
	`handle` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_handle_unique` ON `organizations` (`handle`);--> statement-breakpoint
CREATE TABLE `scoped_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`key_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`organization` integer,
	`environment` integer,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `scoped_keys_key_hash_unique` ON `scoped_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `scoped_keys_organization_idx` ON `scoped_keys` (`organization`);--> statement-breakpoint
CREATE INDEX `scoped_keys_environment_idx` ON `scoped_keys` (`environment`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_data_attrs` (
	`environment` integer DEFAULT 1 NOT NULL,
	`id` text NOT NULL,
	`entity` text NOT NULL,
	`label` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`environment`, `id`)
);
--> statement-breakpoint
INSERT INTO `__new_data_attrs`("environment", "id", "entity", "label", "created_at") SELECT 1, "id", "entity", "label", "created_at" FROM `data_attrs`;--> statement-breakpoint
DROP TABLE `data_attrs`;--> statement-breakpoint
ALTER TABLE `__new_data_attrs` RENAME TO `data_attrs`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `data_attrs_entity_label_uq` ON `data_attrs` (`environment`,`entity`,`label`);--> statement-breakpoint
CREATE TABLE `__new_data_entities` (
	`environment` integer DEFAULT 1 NOT NULL,
	`id` text NOT NULL,
	`entity` text NOT NULL,
	`doc` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`environment`, `id`)
);
--> statement-breakpoint
INSERT INTO `__new_data_entities`("environment", "id", "entity", "doc", "created_at", "updated_at") SELECT 1, "id", "entity", "doc", "created_at", "updated_at" FROM `data_entities`;--> statement-breakpoint
DROP TABLE `data_entities`;--> statement-breakpoint
ALTER TABLE `__new_data_entities` RENAME TO `data_entities`;--> statement-breakpoint
CREATE INDEX `data_entities_entity_idx` ON `data_entities` (`environment`,`entity`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `__new_data_links` (
	`environment` integer DEFAULT 1 NOT NULL,
	`link` text NOT NULL,
	`source_id` text NOT NULL,
	`target_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`environment`, `link`, `source_id`, `target_id`)
);
--> statement-breakpoint
INSERT INTO `__new_data_links`("environment", "link", "source_id", "target_id", "created_at") SELECT 1, "link", "source_id", "target_id", "created_at" FROM `data_links`;--> statement-breakpoint
DROP TABLE `data_links`;--> statement-breakpoint
ALTER TABLE `__new_data_links` RENAME TO `data_links`;--> statement-breakpoint
CREATE INDEX `data_links_target_idx` ON `data_links` (`environment`,`link`,`target_id`);--> statement-breakpoint
DROP INDEX `executions_principal_id_idx`;--> statement-breakpoint
ALTER TABLE `executions` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `executions_principal_id_idx` ON `executions` (`environment`,`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
CREATE TABLE `__new_files` (
	`environment` integer DEFAULT 1 NOT NULL,
	`path` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer,
	`sha256` text,
	`owner_kind` text NOT NULL,
	`owner_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`execution_id` text,
	`field` text,
	`filename` text,
	PRIMARY KEY(`environment`, `path`)
);
--> statement-breakpoint
INSERT INTO `__new_files`("environment", "path", "content_type", "size", "sha256", "owner_kind", "owner_id", "created_at", "updated_at", "execution_id", "field", "filename") SELECT 1, "path", "content_type", "size", "sha256", "owner_kind", "owner_id", "created_at", "updated_at", "execution_id", "field", "filename" FROM `files`;--> statement-breakpoint
DROP TABLE `files`;--> statement-breakpoint
ALTER TABLE `__new_files` RENAME TO `files`;--> statement-breakpoint
CREATE INDEX `files_execution_idx` ON `files` (`execution_id`);--> statement-breakpoint
CREATE INDEX `files_owner_path_idx` ON `files` (`environment`,`owner_kind`,`owner_id`,`path`);--> statement-breakpoint
CREATE TABLE `__new_releases` (
	`environment` integer DEFAULT 1 NOT NULL,
	`version` text NOT NULL,
	`bundle_hash` text NOT NULL,
	`manifest` text NOT NULL,
	`bundle` text NOT NULL,
	`created_at` integer NOT NULL,
	`published_by` text,
	PRIMARY KEY(`environment`, `version`)
);
--> statement-breakpoint
INSERT INTO `__new_releases`("environment", "version", "bundle_hash", "manifest", "bundle", "created_at", "published_by") SELECT 1, "version", "bundle_hash", "manifest", "bundle", "created_at", "published_by" FROM `releases`;--> statement-breakpoint
DROP TABLE `releases`;--> statement-breakpoint
ALTER TABLE `__new_releases` RENAME TO `releases`;--> statement-breakpoint
CREATE INDEX `releases_created_idx` ON `releases` (`environment`,`created_at`,`version`);--> statement-breakpoint
DROP INDEX `scheduled_principal_id_idx`;--> statement-breakpoint
ALTER TABLE `scheduled_invocations` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `scheduled_principal_id_idx` ON `scheduled_invocations` (`environment`,`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
DROP INDEX `workflow_runs_principal_id_idx`;--> statement-breakpoint
ALTER TABLE `workflow_runs` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `workflow_runs_principal_id_idx` ON `workflow_runs` (`environment`,`principal_kind`,`principal_id`,`id`);--> statement-breakpoint
CREATE TABLE `__new_schedule_ticks` (
	`environment` integer DEFAULT 1 NOT NULL,
	`name` text NOT NULL,
	`last_tick_at` integer NOT NULL,
	`lease_owner` text,
	`lease_expires_at` integer NOT NULL,
	PRIMARY KEY(`environment`, `name`)
);
--> statement-breakpoint
INSERT INTO `__new_schedule_ticks`("environment", "name", "last_tick_at", "lease_owner", "lease_expires_at") SELECT 1, "name", "last_tick_at", "lease_owner", "lease_expires_at" FROM `schedule_ticks`;--> statement-breakpoint
DROP TABLE `schedule_ticks`;--> statement-breakpoint
ALTER TABLE `__new_schedule_ticks` RENAME TO `schedule_ticks`;--> statement-breakpoint
ALTER TABLE `api_tokens` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `execution_logs` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `workflow_steps` ADD `environment` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
INSERT INTO `environments` (`id`, `active_version`, `revision`, `updated_at`, `created_at`, `changed`) SELECT `id`, `active_version`, `revision`, `updated_at`, `updated_at`, `revision` FROM `environment` WHERE `id` = 1;--> statement-breakpoint
INSERT INTO `environments` (`id`, `revision`, `updated_at`, `created_at`, `changed`) SELECT 1, 0, 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM `environments` WHERE `id` = 1);