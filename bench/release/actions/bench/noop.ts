import { defineAction, Type } from "actuate";

// What the delayed-invocation drain bench (bench/schedules.ts) schedules: the least an action can do.
export default defineAction({
  description: "Answers its n",
  input: Type.Object({ n: Type.Integer() }),
  output: Type.Object({ n: Type.Integer() }),
  handler: ({ n }) => ({ n }),
});
