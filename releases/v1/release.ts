import { defineRelease, Type } from "actuate";

export default defineRelease({
  version: "v1",
  description: "Example release: a greeting, some arithmetic, and notes (with attachments) each caller keeps",
  entities: {
    notes: {
      title: Type.String({ minLength: 1, indexed: true }),
      ownerId: Type.String({ indexed: true }),
      createdAt: Type.Number({ indexed: true }),
    },
    attachments: {
      filename: Type.String(),
      path: Type.String(),
      size: Type.Number(),
      ownerId: Type.String({ indexed: true }),
    },
  },
  links: {
    noteAttachments: {
      forward: { on: "attachments", has: "one", label: "note" },
      reverse: { on: "notes", has: "many", label: "attachments" },
    },
  },
  // A user reads its own notes and attachments; a service key reads all.
  permissions: { notes: { view: { ownerId: "$auth.id" } }, attachments: { view: { ownerId: "$auth.id" } } },
});
