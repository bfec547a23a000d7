// The size of actuate/client as a browser bundle gets it: minified, then gzip. Goal (issue #16): < 15 KB.
import { gzipSync } from "node:zlib";

const built = await Bun.build({
  entrypoints: [new URL("../src/client/index.ts", import.meta.url).pathname],
  target: "browser",
  minify: true,
});
if (!built.success) throw new AggregateError(built.logs, "actuate/client did not build");
const code = await (built.outputs[0] as Blob).text();
const gzip = gzipSync(code, { level: 9 }).byteLength;
console.log(
  `actuate/client: ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzip / 1024).toFixed(1)} KiB gzip  (goal < 15 KB)`,
);
if (gzip >= 15 * 1024) process.exitCode = 1;
