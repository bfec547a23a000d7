// `bun bench/files.ts` (part of `bun run bench`): a 100 MiB file uploaded and downloaded through the
// server, against the same bytes written and read straight to the disk / straight to the S3 endpoint
// (presigned single PUT and GET), in one run; and the server's peak RSS meanwhile. With STORAGE=s3 a
// download is the signed-download-url call plus a presigned GET of the store (the bytes no longer
// pass through the server). For disk, a bare Bun.serve doing the unavoidable work (stream + sha256 to
// a file, sendfile out; bench/files-floor.ts) is measured too: the floor any server here can reach.
//
// Every HTTP transfer is made by curl (a native client, as wrk is for the invoke bench), from a file of
// random bytes in the page cache and to /dev/null: Bun's fetch streaming 100 MiB from JS was itself the
// bottleneck (a bare server measured through it reached only 0.25 of direct disk). The direct disk
// baseline writes the same bytes from memory with Bun.write and reads them back as a stream.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as Minio from "minio";
// @ts-expect-error s3rver ships no types
import S3rverModule from "s3rver";
import { cleanup, freePort, LAUNCH_ENV, median, startProcess, tempDir, waitHealthy } from "./lib.ts";

const MiB = 1024 * 1024;
const SIZE_MIB = 100;
const ROUNDS = 3;
const S3rver = S3rverModule as new (
  o: Record<string, unknown>,
) => { run(): Promise<{ port: number }>; close(): Promise<void> };

/** The file every transfer sends: random bytes, written once (and so in the page cache). */
const bytes = randomBytes(SIZE_MIB * MiB);
const source = join(tempDir("actuate-bench-source-"), "file.bin");
await Bun.write(source, bytes);

/** One transfer by curl; throws unless it answered 200 and, for a download, the whole file. */
async function curl(args: string[], what: string): Promise<void> {
  const proc = Bun.spawn(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", ...args], {
    stdout: "pipe",
    stderr: "ignore",
  });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const [status, downloaded] = out.split(" ").map(Number);
  const upload = args.includes("--data-binary");
  if (code !== 0 || status !== 200 || (!upload && downloaded !== SIZE_MIB * MiB)) {
    throw new Error(`${what}: curl exit ${code}, HTTP ${status}, ${downloaded} bytes received`);
  }
}

const curlPut = (url: string, headers: Record<string, string>, what: string) =>
  curl(
    [
      ...Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
      "-X",
      "PUT",
      "--data-binary",
      `@${source}`,
      url,
    ],
    what,
  );

const curlGet = (url: string, what: string) => curl([url], what);

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let size = 0;
  for await (const chunk of stream) size += chunk.byteLength;
  return size;
}

const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

async function throughServer(env: Record<string, string>) {
  const port = freePort();
  const key = `bench-${crypto.randomUUID()}`;
  const server = startProcess({
    name: `actuate-files-${env.STORAGE ?? "disk"}`,
    cmd: ["bun", "src/cli/main.ts", "start"],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-bench-files-"),
      SERVICE_KEYS: key,
      DATABASE_URL: "",
      MAX_FILE_BYTES: String(200 * MiB),
      ...env,
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, server);
  const pid = server.proc.pid;
  let peak = rssOf(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 20);
  const auth = { authorization: `Bearer ${key}` };
  return {
    upload: () =>
      timed(() =>
        curlPut(
          `${base}/storage/upload`,
          { ...auth, path: "bench/file.bin", "content-type": "application/octet-stream" },
          "upload through the server",
        ),
      ),
    download: () =>
      timed(async () => {
        const signed = (await (
          await fetch(`${base}/storage/signed-download-url?filename=bench/file.bin`, { headers: auth })
        ).json()) as { url: string };
        await curlGet(signed.url, "download through the server");
      }),
    peak: () => {
      clearInterval(sampler);
      return peak;
    },
    stop: () => server.stop(),
  };
}

interface Pair {
  upload(): Promise<number>;
  download(): Promise<number>;
}

async function compare(label: string, server: Awaited<ReturnType<typeof throughServer>>, direct: Pair, floor?: Pair) {
  const rows = {
    serverUp: [] as number[],
    serverDown: [] as number[],
    directUp: [] as number[],
    directDown: [] as number[],
    floorUp: [] as number[],
    floorDown: [] as number[],
  };
  for (let round = 0; round < ROUNDS; round++) {
    rows.directUp.push(await direct.upload());
    rows.serverUp.push(await server.upload());
    if (floor) rows.floorUp.push(await floor.upload());
    rows.directDown.push(await direct.download());
    rows.serverDown.push(await server.download());
    if (floor) rows.floorDown.push(await floor.download());
  }
  const mbps = (ms: number) => (SIZE_MIB / (ms / 1000)).toFixed(0);
  const up = median(rows.directUp) / median(rows.serverUp);
  const down = median(rows.directDown) / median(rows.serverDown);
  console.log(`${label}: ${SIZE_MIB} MiB, median of ${ROUNDS}`);
  console.log(
    `  upload    server ${mbps(median(rows.serverUp))} MiB/s  direct ${mbps(median(rows.directUp))} MiB/s  ratio ${up.toFixed(2)}${up >= 0.6 ? "" : "  MISSED"} (target >= 0.6)`,
  );
  console.log(
    `  download  server ${mbps(median(rows.serverDown))} MiB/s  direct ${mbps(median(rows.directDown))} MiB/s  ratio ${down.toFixed(2)}${down >= 0.6 ? "" : "  MISSED"} (target >= 0.6)`,
  );
  if (floor) {
    const floorUp = median(rows.directUp) / median(rows.floorUp);
    const floorDown = median(rows.directDown) / median(rows.floorDown);
    console.log(
      `  bare Bun.serve floor: upload ${mbps(median(rows.floorUp))} MiB/s (ratio ${floorUp.toFixed(2)}), download ${mbps(median(rows.floorDown))} MiB/s (ratio ${floorDown.toFixed(2)})`,
    );
  }
  console.log(`  server peak RSS ${(server.peak() / MiB).toFixed(0)} MiB`);
}

async function bareFloor(): Promise<Pair & { stop(): Promise<void> }> {
  const port = freePort();
  const proc = startProcess({
    name: "files-floor",
    cmd: ["bun", "bench/files-floor.ts"],
    env: { PORT: String(port), FLOOR_DIR: tempDir("actuate-bench-floor-") },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);
  return {
    upload: () => timed(() => curlPut(`${base}/file`, {}, "floor upload")),
    download: () => timed(() => curlGet(`${base}/file`, "floor download")),
    stop: () => proc.stop(),
  };
}

async function disk() {
  const dir = tempDir("actuate-bench-direct-");
  const path = join(dir, "file.bin");
  const server = await throughServer({});
  const floor = await bareFloor();
  await compare(
    "disk",
    server,
    {
      upload: () => timed(() => Bun.write(path, bytes)),
      download: () => timed(() => drain(Bun.file(path).stream())),
    },
    floor,
  );
  await floor.stop();
  await server.stop();
}

async function s3() {
  const directory = tempDir("actuate-bench-s3-");
  const s3rver = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  const { port } = await s3rver.run();
  const endPoint = `http://127.0.0.1:${port}`;
  const client = new Minio.Client({
    endPoint: "127.0.0.1",
    port,
    useSSL: false,
    accessKey: "S3RVER",
    secretKey: "S3RVER",
    region: "us-east-1",
  });
  await client.makeBucket("bench-direct", "us-east-1");
  const server = await throughServer({
    STORAGE: "s3",
    S3_ENDPOINT: endPoint,
    S3_BUCKET: "bench-server",
    S3_ACCESS_KEY: "S3RVER",
    S3_SECRET_KEY: "S3RVER",
  });
  await compare("s3 (s3rver)", server, {
    upload: () =>
      timed(async () =>
        curlPut(await client.presignedPutObject("bench-direct", "file.bin", 600), {}, "direct PUT to the store"),
      ),
    download: () =>
      timed(async () =>
        curlGet(await client.presignedGetObject("bench-direct", "file.bin", 600), "direct GET from the store"),
      ),
  });
  await server.stop();
  await s3rver.close();
}

try {
  await disk();
  await s3();
} finally {
  await cleanup();
}
