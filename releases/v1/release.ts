import { defineRelease, Type } from "actuate";

export default defineRelease({
  version: "v1",
  description: "Example release: a greeting, some arithmetic, and notes each caller keeps",
  entities: {
    notes: {
      title: Type.String({ minLength: 1, indexed: true }),
      ownerId: Type.String({ indexed: true }),
      createdAt: Type.Number({ indexed: true }),
    },
  },
  // A user reads its own notes; a service key reads all.
  permissions: { notes: { view: { ownerId: "$auth.id" } } },
});
