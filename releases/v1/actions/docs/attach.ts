import { defineAction, FileInput, Type } from "actuate";

export default defineAction({
  description: "Attach a file to one of the caller's notes",
  input: Type.Object({
    note: Type.String({ description: "the note's id", minLength: 1, maxLength: 64 }),
    file: FileInput({ maxBytes: 10_000_000 }),
  }),
  output: Type.Object({ id: Type.String(), path: Type.String() }),
  handler: async ({ note, file }, ctx) => {
    // Read as the caller: another user's note is not found.
    const { notes = [] } = await ctx.db.query({ notes: { $: { where: { id: note } } } });
    if (notes.length === 0) throw new Error(`no note ${note}`);
    const id = await ctx.db.create("attachments", {
      filename: file.filename,
      path: file.path,
      size: file.size,
      ownerId: ctx.auth.id,
    });
    await ctx.db.link("attachments", id, "note", note);
    return { id, path: file.path };
  },
});
