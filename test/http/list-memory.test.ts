import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "../support/cli.ts";
import { fixture } from "../support/server.ts";

const MiB = 1024 * 1024;

/** The peak resident memory of a process so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB$/m);
  if (!line?.[1]) throw new Error("no VmHWM in /proc/<pid>/status");
  return Number(line[1]) * 1024;
}

// A page of 40 executions of 2 MiB in and out is 160 MiB of values: listing them whole (four at once)
// took the server's peak RSS up by hundreds of MiB. Lists leave large values in the database.
const BOUND = 48 * MiB;

test.skipIf(process.platform !== "linux")(
  `a list of large executions keeps the server's peak RSS within ${BOUND / MiB} MiB of where it was`,
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-list-memory-"));
    const key = `list-memory-${crypto.randomUUID()}`;
    const server = await serve(["start", "--release", fixture("basic")], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      SERVICE_KEYS: key,
    });
    try {
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const text = "x".repeat(2 * MiB);
      for (let i = 0; i < 40; i++) {
        const response = await fetch(`${server.url}/actions/test.echo/invoke`, {
          method: "POST",
          headers,
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { text } }),
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      Bun.gc(true);
      const before = peakRss(server.proc.pid);
      const pages = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const response = await fetch(`${server.url}/executions?limit=200`, { headers });
          expect(response.status).toBe(200);
          return (await response.json()) as { items: { inputTruncated?: { bytes: number } }[] };
        }),
      );
      expect(peakRss(server.proc.pid) - before).toBeLessThan(BOUND);
      for (const page of pages) {
        expect(page.items).toHaveLength(40);
        for (const item of page.items) expect(item.inputTruncated?.bytes).toBeGreaterThan(2 * MiB);
      }
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  120_000,
);
