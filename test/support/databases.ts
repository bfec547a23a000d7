import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";

/** A fresh, empty database for one suite; `drop()` removes it. */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export interface Dialect {
  name: "sqlite" | "postgres";
  create(): Promise<TestDatabase>;
}

const sqlite: Dialect = {
  name: "sqlite",
  async create() {
    const dir = mkdtempSync(join(tmpdir(), "actuate-db-"));
    return { url: `sqlite:${join(dir, "test.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

const postgresUrl = process.env.TEST_DATABASE_URL;
if (process.env.CI && !postgresUrl) {
  throw new Error("CI must run the PostgreSQL suite: set TEST_DATABASE_URL (see .ci/run)");
}

const pg = (adminUrl: string): Dialect => ({
  name: "postgres",
  async create() {
    const name = `actuate_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      async drop() {
        const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
        await dropper.unsafe(`drop database if exists ${name} with (force)`);
        await dropper.end();
      },
    };
  },
});

/** SQLite always; PostgreSQL when TEST_DATABASE_URL names a server (CI always sets it). */
export const dialects: Dialect[] = postgresUrl ? [sqlite, pg(postgresUrl)] : [sqlite];

/** Rows of one read statement on the database at `url`, over a connection of its own (to look at what is stored). */
export async function selectRows(url: string, sql: string): Promise<Record<string, unknown>[]> {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      return [...(await client.unsafe(sql))];
    } finally {
      await client.end();
    }
  }
  const { Database } = await import("bun:sqlite");
  const client = new Database(url.replace(/^(sqlite|file):(\/\/)?/, ""), { readonly: true });
  try {
    return client.query(sql).all() as Record<string, unknown>[];
  } finally {
    client.close();
  }
}

/** Runs statements on the database at `url` over a connection of its own (to change it under a running server). */
export async function executeStatements(url: string, sql: string): Promise<void> {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await client.unsafe(sql);
    } finally {
      await client.end();
    }
    return;
  }
  const { Database } = await import("bun:sqlite");
  const client = new Database(url.replace(/^(sqlite|file):(\/\/)?/, ""));
  try {
    client.run(sql);
  } finally {
    client.close();
  }
}

/**
 * The execution ids a copy of the SQLite database file alone holds, its WAL left behind: what a
 * checkpoint has copied into the file. A copy taken while a checkpoint writes the file may not open:
 * none then, and the next look will.
 */
export async function checkpointedExecutionIds(file: string): Promise<Set<string>> {
  const copy = `${file}.${crypto.randomUUID()}.copy`;
  copyFileSync(file, copy);
  try {
    return new Set((await selectRows(`sqlite:${copy}`, "select id from executions")).map((r) => r.id as string));
  } catch {
    return new Set();
  } finally {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
  }
}

/** Runs one statement that changes the database at `url`, over a connection of its own (a test moving stored times). */
export async function runStatement(url: string, sql: string): Promise<void> {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await client.unsafe(sql);
    } finally {
      await client.end();
    }
    return;
  }
  const { Database } = await import("bun:sqlite");
  const client = new Database(url.replace(/^(sqlite|file):(\/\/)?/, ""));
  try {
    client.run("pragma busy_timeout = 5000");
    client.run(sql);
  } finally {
    client.close();
  }
}
