import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LoadBalancer, supervised } from "./haproxy.ts";

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
  return supervised("nginx", [nginxPath, "-e", "stderr", "-p", dir, "-c", file, "-g", "daemon off;"], dir, url);
}
