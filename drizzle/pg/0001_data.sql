CREATE TABLE "data_attrs" (
	"id" text PRIMARY KEY NOT NULL,
	"entity" text NOT NULL,
	"label" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "data_entities" (
	"id" text PRIMARY KEY NOT NULL,
	"entity" text NOT NULL,
	"doc" jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "data_links" (
	"link" text NOT NULL,
	"source_id" text NOT NULL,
	"target_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "data_links_link_source_id_target_id_pk" PRIMARY KEY("link","source_id","target_id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "data_attrs_entity_label_uq" ON "data_attrs" USING btree ("entity","label");--> statement-breakpoint
CREATE INDEX "data_entities_entity_idx" ON "data_entities" USING btree ("entity","created_at","id");--> statement-breakpoint
CREATE INDEX "data_links_target_idx" ON "data_links" USING btree ("link","target_id");