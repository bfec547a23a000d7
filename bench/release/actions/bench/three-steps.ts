import { defineWorkflow, Type } from "actuate";

export default defineWorkflow({
  description: "Three trivial steps (benchmark)",
  input: Type.Object({ n: Type.Number() }),
  output: Type.Object({ total: Type.Number() }),
  async run({ n }, { step }) {
    const a = await step("one", () => n + 1);
    const b = await step("two", () => a + 1);
    const c = await step("three", () => b + 1);
    return { total: c };
  },
});
