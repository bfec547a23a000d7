// The console's first load: the HTML of /console, its JS and its CSS, gzip (what a browser downloads before
// it can sign in). Built as `bun run build` bundles it into the binary (not minified), and minified for
// comparison. Goal (issue #45): < 80 KiB.
import { gzipSync } from "node:zlib";

const sizes = async (minify: boolean) => {
  const built = await Bun.build({
    entrypoints: [new URL("../src/console/index.html", import.meta.url).pathname],
    target: "browser",
    minify,
  });
  if (!built.success) throw new AggregateError(built.logs, "the console did not build");
  let raw = 0;
  let gzip = 0;
  for (const output of built.outputs) {
    const bytes = new Uint8Array(await output.arrayBuffer());
    raw += bytes.byteLength;
    gzip += gzipSync(bytes, { level: 6 }).byteLength;
  }
  return { files: built.outputs.length, raw, gzip };
};

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
for (const minify of [false, true]) {
  const { files, raw, gzip } = await sizes(minify);
  console.log(
    `console first load (${minify ? "minified" : "as in the binary"}): ${files} files, ${kib(raw)}, ${kib(gzip)} gzip  (goal < 80 KiB)`,
  );
  if (gzip >= 80 * 1024) process.exitCode = 1;
}
