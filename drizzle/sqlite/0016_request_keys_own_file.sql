DROP TABLE `execution_requests`;--> statement-breakpoint
DROP TABLE `execution_requests_merged`;