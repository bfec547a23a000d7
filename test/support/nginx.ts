import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadBalancer } from "./haproxy.ts";

/** nginx's path, or null when it is not installed (.ci/run installs it). */
export const nginxPath = Bun.which("nginx") ?? Bun.which("nginx", { PATH: "/usr/sbin:/usr/local/sbin" });
if (process.env.CI && !nginxPath) {
  throw new Error("CI must run the rolling-restart test with nginx: install nginx (see .ci/run)");
}

/**
 * A folder holding an nginx main configuration around `httpConfig` (what goes in nginx's http block, as
 * deploy/nginx/instances.conf does), with its pid, log and temporary files in the folder, so nginx runs
 * as any user and without the system's folders.
 */
function nginxFolder(httpConfig: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "actuate-nginx-"));
  writeFileSync(join(dir, "actuate.conf"), httpConfig);
  const file = join(dir, "nginx.conf");
  // As root, nginx's workers would run as nobody, who cannot write in this folder.
  const user = process.getuid?.() === 0 ? "user root root;\n" : "";
  writeFileSync(
    file,
    `${user}pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/actuate.conf;
}
`,
  );
  return { dir, file };
}

/** `nginx -t` on `httpConfig` (see nginxFolder): its exit code and what it said. */
export function checkNginx(httpConfig: string): { code: number; output: string } {
  if (!nginxPath) throw new Error("nginx is not installed");
  const { dir, file } = nginxFolder(httpConfig);
  try {
    const checked = Bun.spawnSync([nginxPath, "-t", "-e", "stderr", "-p", dir, "-c", file], {
      stdout: "pipe",
      stderr: "pipe",
    });
    return { code: checked.exitCode, output: checked.stdout.toString() + checked.stderr.toString() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** nginx running `httpConfig` (see nginxFolder), serving once `GET <url>/healthz` through it answers 200. */
export async function runNginx(httpConfig: string, url: string): Promise<LoadBalancer> {
  if (!nginxPath) throw new Error("nginx is not installed");
  const { dir, file } = nginxFolder(httpConfig);
  const proc = Bun.spawn([nginxPath, "-e", "stderr", "-p", dir, "-c", file, "-g", "daemon off;"], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  // Read all along: nginx writes a line each time an instance fails, and a pipe nobody reads would fill.
  const said = tail(proc.stderr);
  let stopping = false;
  const stop = async () => {
    stopping = true;
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx exited (${proc.exitCode}): ${await said()}`);
    }
    const answered = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (answered) {
      // Told once serving: an exit before `stop` is the balancer failing the tests that follow.
      void proc.exited.then(async (code) => {
        if (!stopping) console.error(`nginx exited before stop (${proc.signalCode ?? code}): ${await said()}`);
      });
      return { url, stop };
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nginx did not serve within 10 s: ${await said()}`);
    }
    await Bun.sleep(50);
  }
}

/** Reads a stream to its end, keeping its last 4 KiB: the function resolves to them once it has ended. */
function tail(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  let text = "";
  const ended = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text = (text + decoder.decode(chunk, { stream: true })).slice(-4096);
  })().catch(() => {});
  return async () => {
    await ended;
    return text;
  };
}
