import { iso } from "../lib/values.ts";
import type { InstanceRecord } from "../store/instances.ts";
import type { Store } from "../store/store.ts";
import type { Instance } from "../wire/views.ts";

/** Where an instance runs, read back from its id (`newInstanceId`: `<host>:<pid>:<random>`; a host may hold colons). */
function hostAndPid(id: string): { host: string; pid: number } {
  const parts = id.split(":");
  return { host: parts.slice(0, -2).join(":"), pid: Number(parts.at(-2)) };
}

export const toInstanceView = (record: InstanceRecord, self: string): Instance => ({
  id: record.id,
  ...hostAndPid(record.id),
  startedAt: new Date(record.startedAt).toISOString(),
  lastHeartbeatAt: iso(record.beatAt),
  expiresAt: iso(record.expiresAt),
  version: record.version,
  self: record.id === self,
});

/** The instances sharing the database now, oldest first: `GET /instances` and `actuate instances`. */
export async function liveInstances(store: Pick<Store, "instances">, now = Date.now()): Promise<Instance[]> {
  const records = await store.instances.live(now);
  return records.map((record) => toInstanceView(record, store.instances.id));
}
