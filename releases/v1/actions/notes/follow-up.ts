import { defineWorkflow, Type } from "actuate";

export default defineWorkflow({
  description: "Add a note for the caller now and a follow-up note after a durable pause",
  input: Type.Object({
    title: Type.String({ minLength: 1, maxLength: 180 }),
    afterMs: Type.Integer({ minimum: 0, maximum: 7 * 24 * 3_600_000 }),
  }),
  output: Type.Object({ noteId: Type.String(), followUpId: Type.String() }),
  async run({ title, afterMs }, { step, sleep, ctx }) {
    // Each step's write commits with its checkpoint: a restart never adds a note twice.
    const noteId = await step("add-note", (s) =>
      s.db.create("notes", { title, ownerId: ctx.auth.id, createdAt: Date.now() }),
    );
    await sleep("pause", afterMs);
    const followUpId = await step("add-follow-up", (s) =>
      s.db.create("notes", { title: `Follow up: ${title}`, ownerId: ctx.auth.id, createdAt: Date.now() }),
    );
    return { noteId, followUpId };
  },
});
