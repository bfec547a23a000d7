import { cpSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./cli.ts";

/**
 * The TypeScript types openapi-typescript writes for an OpenAPI document. It builds them with the
 * TypeScript 5 compiler API, which TypeScript 7 (this repository's) no longer has, so a copy of it is
 * bound to `typescript5` (an npm alias among the devDependencies) inside `scratch`, whose
 * node_modules must reach the repository's.
 */
export async function openApiTypes(doc: unknown, scratch: string): Promise<string> {
  const copy = join(scratch, "openapi-typescript");
  cpSync(join(repoRoot, "node_modules", "openapi-typescript", "dist"), copy, { recursive: true });
  for (const file of filesUnder(copy).filter((f) => f.endsWith(".mjs"))) {
    writeFileSync(file, readFileSync(file, "utf8").replaceAll("from 'typescript'", "from 'typescript5'"));
  }
  const { default: openapiTS, astToString } = (await import(
    join(copy, "index.mjs")
  )) as typeof import("openapi-typescript");
  return astToString(await openapiTS(doc as never));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
