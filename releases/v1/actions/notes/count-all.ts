import { defineAction, Type } from "actuate";

export default defineAction({
  description: "Count every caller's notes (service keys only: users cannot see or call it)",
  access: "service",
  input: Type.Object({}),
  output: Type.Object({ notes: Type.Integer() }),
  // A service key's reads bypass view rules, so this sees every note.
  handler: async (_input, ctx) => ({ notes: ((await ctx.db.query({ notes: {} })).notes ?? []).length }),
});
