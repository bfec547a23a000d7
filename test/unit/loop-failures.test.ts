import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { LoopFailures } from "../../src/lib/loop-failures.ts";

type Told = { message: string; level: string };

/** What a loop's statement fails with when nothing listens where the database was: a refused connection, wrapped by drizzle. */
async function refusedStatement(): Promise<unknown> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const client = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  const error = await drizzle({ client })
    .execute(sql`select ${"a-token-hash"}::text`)
    .catch((failure: unknown) => failure);
  await client.end({ timeout: 1 });
  return error;
}

function loop() {
  const told: Told[] = [];
  const failures = new LoopFailures("the loop", (message, { level }) => told.push({ message, level }));
  return { failures, told };
}

test("an outage is told twice however many calls fail in it: when it begins (warn) and when a call works again (info), without the statement's parameters", async () => {
  const away = await refusedStatement();
  expect((away as Error).message).toContain("a-token-hash");
  const { failures, told } = loop();
  failures.worked();
  for (let tick = 0; tick < 5; tick++) failures.failed(away);
  failures.worked();
  failures.worked();
  expect(told).toEqual([
    { message: "the loop: the database cannot be reached; trying again until it is back", level: "warn" },
    { message: "the loop: the database is back", level: "info" },
  ]);
  failures.failed(away);
  expect(told).toHaveLength(3);
});

test("a call begun before the database came back that fails after is no new outage; one begun after is", async () => {
  const away = await refusedStatement();
  const { failures, told } = loop();
  failures.failed(away);
  const waiting = failures.begin();
  failures.worked();
  failures.failed(away, { begun: waiting });
  expect(told.map((t) => t.level)).toEqual(["warn", "info"]);
  failures.failed(away, { begun: failures.begin() });
  expect(told.map((t) => t.level)).toEqual(["warn", "info", "warn"]);
});

test("anything but the database away is a bug, told each time with its stack and what the loop was doing", () => {
  const { failures, told } = loop();
  const fields: Record<string, unknown>[] = [];
  const bugs = new LoopFailures("the loop", (_message, all) => fields.push(all));
  for (const each of [failures, failures, bugs]) each.failed(new TypeError("a bug"), { about: { executionId: "e1" } });
  expect(told.map((t) => t.level)).toEqual(["error", "error"]);
  expect(told[0]?.message).toStartWith("the loop failed: TypeError: a bug\n    at ");
  expect(fields).toEqual([{ level: "error", executionId: "e1" }]);
});
