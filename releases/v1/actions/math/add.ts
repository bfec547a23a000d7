import { defineAction, Type } from "actuate";

export default defineAction({
  description: "Add two numbers",
  input: Type.Object({ a: Type.Number(), b: Type.Number() }),
  output: Type.Object({ sum: Type.Number() }),
  handler: ({ a, b }) => ({ sum: a + b }),
});
