import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** HAProxy's path, or null when it is not installed (.ci/run installs it). */
export const haproxyPath = Bun.which("haproxy");
if (process.env.CI && !haproxyPath) {
  throw new Error("CI must run the three-instance test: install haproxy (see .ci/run)");
}

/** A port free on loopback now (the OS picks it; closed again at once). */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

export interface LoadBalancer {
  url: string;
  stop(): Promise<void>;
}

/**
 * HAProxy in front of `backends` (host:port), round-robin in http mode on a loopback `port`. A backend
 * is taken out after one failed health check (GET /healthz every 100 ms) and put back after one good
 * one. A check waits up to a second for its answer: a dead instance fails it at once (connection
 * refused), while a live one on a loaded machine may take longer than the 100 ms HAProxy would otherwise
 * allow, and with the others stopped, the balancer answered its own 503 page. A request whose backend refused the connection or closed it without answering is sent again to
 * another: safe here because invokes are idempotent by requestId. Timeouts are above any WAIT_MS a test uses.
 */
export function startHaproxy(port: number, backends: string[]): Promise<LoadBalancer> {
  return runHaproxy(
    `global
  maxconn 2000

defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout tunnel 60s
  timeout check 1s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response

frontend actuate
  bind 127.0.0.1:${port}
  default_backend instances

backend instances
  balance roundrobin
  option httpchk GET /healthz
  default-server inter 100 fall 1 rise 1
${backends.map((backend, i) => `  server i${i} ${backend} check`).join("\n")}
`,
    `http://127.0.0.1:${port}`,
  );
}

/**
 * HAProxy running `config` (the text of a configuration file), serving once `GET <url>/healthz` through it
 * answers 200 (`init`: e.g. `{ tls: { ca } }` for a frontend with a test certificate).
 */
export async function runHaproxy(config: string, url: string, init: BunFetchRequestInit = {}): Promise<LoadBalancer> {
  if (!haproxyPath) throw new Error("haproxy is not installed");
  const dir = mkdtempSync(join(tmpdir(), "actuate-haproxy-"));
  const file = join(dir, "haproxy.cfg");
  writeFileSync(file, config);
  return supervised("haproxy", [haproxyPath, "-f", file], dir, url, init);
}

/**
 * A balancer process (`command`, its files in `dir`, removed when it stops), serving once `GET <url>/healthz`
 * through it answers 200 within 10 s.
 */
export async function supervised(
  name: string,
  command: string[],
  dir: string,
  url: string,
  init: BunFetchRequestInit = {},
): Promise<LoadBalancer> {
  const proc = Bun.spawn(command, { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  // Read all along: a balancer writes a line each time a backend goes down or up, and a pipe nobody reads
  // would fill. The last lines tell why it stopped, should it stop before `stop`.
  const said = tail(proc.stderr);
  let stopping = false;
  const stop = async () => {
    stopping = true;
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  // Serving once a request through it reaches a backend.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`${name} exited (${proc.exitCode}): ${await said()}`);
    }
    const answered = await fetch(`${url}/healthz`, init).then(
      (r) => r.ok,
      () => false,
    );
    if (answered) {
      // Told once serving: an exit before `stop` is the balancer failing the tests that follow.
      void proc.exited.then(async (code) => {
        if (!stopping) console.error(`${name} exited before stop (${proc.signalCode ?? code}): ${await said()}`);
      });
      return { url, stop };
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not serve within 10 s: ${await said()}`);
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
