import { defineAction, Type } from "actuate";

export default defineAction({
  description: "Greet someone by name, as the caller",
  input: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }),
  output: Type.Object({ message: Type.String(), caller: Type.String() }),
  handler: ({ name }, ctx) => {
    ctx.log("greeting", name);
    return { message: `Hello, ${name}!`, caller: `${ctx.auth.kind}:${ctx.auth.id}` };
  },
});
