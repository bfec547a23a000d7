// A bare Bun.serve doing only what a file upload and download cannot avoid: PUT streams the body to
// a file while hashing it (sha256), GET sends the file. bench/files.ts runs it beside the real server
// to show how much of the gap to direct disk access is the HTTP hop and the hash, not Actuate.
import { join } from "node:path";

const dir = process.env.FLOOR_DIR ?? ".";
const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: "127.0.0.1",
  maxRequestBodySize: 1024 * 1024 * 1024,
  async fetch(request) {
    const path = join(dir, "file.bin");
    if (new URL(request.url).pathname === "/healthz") return Response.json({ ok: true });
    if (request.method === "GET") return new Response(Bun.file(path));
    const hash = new Bun.CryptoHasher("sha256");
    const out = Bun.file(path).writer({ highWaterMark: 1024 * 1024 });
    for await (const chunk of request.body ?? []) {
      hash.update(chunk);
      await out.write(chunk);
    }
    await out.end();
    return Response.json({ sha256: hash.digest("hex") });
  },
});
console.log(`floor serving ${server.port}`);
