CREATE TABLE "execution_logs" (
	"execution_id" text NOT NULL,
	"seq" integer NOT NULL,
	"at" bigint NOT NULL,
	"level" text NOT NULL,
	"step" text,
	"line" text NOT NULL,
	CONSTRAINT "execution_logs_execution_id_seq_pk" PRIMARY KEY("execution_id","seq")
);
--> statement-breakpoint
CREATE INDEX "executions_finished_idx" ON "executions" USING btree ("finished_at") WHERE finished_at is not null;