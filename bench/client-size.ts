// The size of actuate/client as an app ships it: the built package's client.js (bun run build:client), minified
// and gzipped as a bundler would. Goal: ≤ 6 KiB gzip (exit code 1 above). Also the size of the tarball npm packs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildClientPackage, packClientPackage, shippedClientSize } from "../tools/client-package.ts";

const GOAL = 6 * 1024;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

await buildClientPackage();
const { minified, gzip } = await shippedClientSize();
const destination = mkdtempSync(join(tmpdir(), "actuate-client-size-"));
try {
  const { bytes } = await packClientPackage(destination);
  console.log(
    `actuate/client: ${kib(minified)} minified, ${kib(gzip)} gzip  (goal ≤ ${kib(GOAL)}); npm tarball ${kib(bytes)}`,
  );
} finally {
  rmSync(destination, { recursive: true, force: true });
}
if (gzip > GOAL) process.exitCode = 1;
