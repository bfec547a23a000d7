import { defineRelease } from "actuate";

// The release the workflow bench (bench/workflows.ts) runs: one workflow of three trivial steps.
export default defineRelease({ version: "bench" });
