import { defineRelease } from "actuate";

export default defineRelease({ version: "v1", description: "Example release: a greeting and some arithmetic" });
