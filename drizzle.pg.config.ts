import { defineConfig } from "drizzle-kit";

export default defineConfig({ dialect: "postgresql", schema: "./src/store/pg/schema.ts", out: "./drizzle/pg" });
