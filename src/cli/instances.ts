import type { Config } from "../config.ts";
import { liveInstances } from "../engine/fleet.ts";
import type { Instance } from "../wire/views.ts";
import { remote } from "./remote.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

const isSqlite = (config: Config) => !/^postgres(ql)?:\/\//.test(config.databaseUrl);

/** The live server processes: from the database (PostgreSQL), or from a server with --url (GET /instances). */
export async function instancesList(config: () => Config, flags: { url?: string }): Promise<number> {
  let instances: Instance[];
  if (flags.url) {
    instances = (await remote(flags.url).request<{ items: Instance[] }>("/instances")).items;
  } else {
    const local = config();
    if (isSqlite(local)) {
      // Its one server keeps no heartbeat row; this command's own process is no instance.
      console.log("a SQLite database is served by one process, which keeps no heartbeat: ask it with --url");
      return 0;
    }
    instances = await withStore(local, (store) => liveInstances(store));
  }
  if (instances.length === 0) {
    console.log("no live instances: no server's heartbeat is current");
    return 0;
  }
  printTable([
    ["INSTANCE", "HOST", "PID", "VERSION", "STARTED", "LAST HEARTBEAT", "EXPIRES"],
    ...instances.map((i) => [
      `${i.id}${i.self ? " *" : ""}`,
      i.host,
      String(i.pid),
      i.version ?? "-",
      i.startedAt,
      i.lastHeartbeatAt ?? "-",
      i.expiresAt ?? "-",
    ]),
  ]);
  return 0;
}
