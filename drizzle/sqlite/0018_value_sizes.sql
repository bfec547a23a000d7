-- Lists select by the sizes of inputs and outputs stored with them (issue #46). Rows written before get
-- theirs here: octet_length reads no value, but each row grows, so SQLite writes it again (the table
-- passes once through the WAL).
ALTER TABLE `executions` ADD `input_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `output_bytes` integer;--> statement-breakpoint
UPDATE `executions` SET `input_bytes` = octet_length(`input`), `output_bytes` = octet_length(`output`);--> statement-breakpoint
ALTER TABLE `workflow_runs` ADD `input_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `workflow_runs` ADD `output_bytes` integer;--> statement-breakpoint
UPDATE `workflow_runs` SET `input_bytes` = octet_length(`input`), `output_bytes` = octet_length(`output`);--> statement-breakpoint
ALTER TABLE `workflow_steps` ADD `output_bytes` integer;--> statement-breakpoint
UPDATE `workflow_steps` SET `output_bytes` = octet_length(`output`);
