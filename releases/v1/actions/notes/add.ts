import { defineAction, Type } from "actuate";

export default defineAction({
  description: "Add a note for the caller",
  input: Type.Object({ title: Type.String({ minLength: 1, maxLength: 200 }) }),
  output: Type.Object({ id: Type.String() }),
  handler: async ({ title }, ctx) => ({
    id: await ctx.db.create("notes", { title, ownerId: ctx.auth.id, createdAt: Date.now() }),
  }),
});
