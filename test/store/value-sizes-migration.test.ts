import { describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { migrateToBefore } from "../support/migrations.ts";

const TAG = "value_sizes";

const LARGE = { text: "ü".repeat(3_000) };
const OUTPUT = { ok: true, list: [1, 2] };
const json = (value: unknown) => `'${JSON.stringify(value)}'`;

for (const dialect of dialects) {
  describe(`migration ${TAG} (${dialect.name})`, () => {
    test("executions, runs and steps written before get their values' sizes, and keep everything else", async () => {
      const database = await dialect.create();
      try {
        await migrateToBefore(TAG, dialect.name === "sqlite" ? "sqlite" : "pg", database.url);
        const [large, small, runId] = [Bun.randomUUIDv7(), Bun.randomUUIDv7(), Bun.randomUUIDv7()];
        const execution = (id: string, kind: string, input: unknown, output: unknown) =>
          `('${id}', '${crypto.randomUUID()}', 'user', 'alice', 'test.echo', '${kind}', 't1', 'c', 'f', ${json(input)},
            'succeeded', ${output === null ? "null" : json(output)}, 1800000000000, 1800000000000, 1800000000001)`;
        await runStatement(
          database.url,
          `insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version,
             contract_hash, input_fingerprint, input, status, output, created_at, started_at, finished_at)
           values ${execution(large, "function", LARGE, OUTPUT)}, ${execution(small, "function", { n: 1 }, null)},
             ${execution(runId, "workflow", LARGE, OUTPUT)}`,
        );
        await runStatement(
          database.url,
          `insert into workflow_runs (id, request_id, workflow, release_version, principal_kind, principal_id, input,
             status, output, wake_at, created_at, updated_at, finished_at)
           values ('${runId}', 'r', 'orders.fulfil', 't1', 'user', 'alice', ${json(LARGE)}, 'succeeded', ${json(OUTPUT)},
             1800000000000, 1800000000000, 1800000000001, 1800000000001)`,
        );
        await runStatement(
          database.url,
          `insert into workflow_steps (run_id, name, seq, kind, status, attempts, output)
           values ('${runId}', 'copy', 0, 'step', 'succeeded', 1, ${json(LARGE)})`,
        );
        const rowids =
          dialect.name === "sqlite" ? await selectRows(database.url, "select rowid, id from executions") : [];

        // PostgreSQL sizes the rows before as it prints their jsonb (`{"a": 1}`: a space after each : and ,).
        const bytes = async (value: unknown) => {
          if (dialect.name === "sqlite") return Buffer.byteLength(JSON.stringify(value));
          const [row] = await selectRows(database.url, `select octet_length(${json(value)}::jsonb::text) as n`);
          return Number(row?.n);
        };
        const store = await openStore(database.url);
        try {
          const listed = new Map(
            (await store.executions.list({ limit: 10, maxValueBytes: 4096 })).map((row) => [row.id, row]),
          );
          expect(listed.get(large)).toMatchObject({ inputBytes: await bytes(LARGE), outputBytes: await bytes(OUTPUT) });
          expect(listed.get(small)).toMatchObject({
            input: { n: 1 },
            inputBytes: await bytes({ n: 1 }),
            outputBytes: 0,
          });
          expect(await store.executions.get(large)).toMatchObject({
            input: LARGE,
            output: OUTPUT,
            status: "succeeded",
          });
          expect(await store.runs.getBounded(runId, 100_000)).toMatchObject({
            input: LARGE,
            inputBytes: await bytes(LARGE),
            output: OUTPUT,
            outputBytes: await bytes(OUTPUT),
          });
          expect(await store.runs.boundedSteps(runId, 100_000)).toMatchObject([
            { name: "copy", output: LARGE, outputBytes: await bytes(LARGE) },
          ]);
        } finally {
          await store.close();
        }
        if (dialect.name === "sqlite") {
          // The request-key index reads executions by rowid: the rebuilt table keeps them.
          expect(await selectRows(database.url, "select rowid, id from executions")).toEqual(rowids);
        }
      } finally {
        await database.drop();
      }
    }, 60_000);
  });
}
