import { existsSync, readdirSync } from "node:fs";

/**
 * A private PostgreSQL cluster on a port of its own, made by a test and removed after, so that stopping
 * it harms nothing else. pg_createcluster (Debian's postgresql-common) needs root, as CI runs.
 */
export const canMakeClusters =
  process.platform === "linux" && process.getuid?.() === 0 && existsSync("/usr/bin/pg_createcluster");

export interface PrivateCluster {
  /** The `postgres` database, trust auth. */
  url: string;
  start(): void;
  /** A fast shutdown: connections are ended, new ones refused until `start`. */
  stop(): void;
  /** Stops and removes the cluster. */
  drop(): void;
}

function pgctl(...args: string[]) {
  const run = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`${args.join(" ")}: ${run.stderr.toString()}`);
}

export function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = probe;
  probe.stop(true);
  return port;
}

/** Creates the cluster and starts it. */
export function privateCluster(): PrivateCluster {
  const version = readdirSync("/etc/postgresql")[0] as string;
  const name = `actuate_outage_${crypto.randomUUID().slice(0, 8)}`;
  const port = freePort();
  pgctl("pg_createcluster", version, name, "-p", String(port), "--", "--auth=trust");
  const cluster: PrivateCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => pgctl("pg_ctlcluster", version, name, "start"),
    stop: () => pgctl("pg_ctlcluster", version, name, "stop", "-m", "fast"),
    drop: () => {
      Bun.spawnSync(["pg_dropcluster", "--stop", version, name]);
    },
  };
  try {
    cluster.start();
  } catch (error) {
    cluster.drop();
    throw error;
  }
  return cluster;
}
