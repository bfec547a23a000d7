import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ActuateError, createClient, type OptimisticStore } from "../../src/client/index.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

type Todo = { id: string; title: string; list: string };
type Release = {
  actions: {
    "todo.add": { input: { title: string; list: string; gate?: string; fail?: boolean }; output: { id: string } };
    "todo.open": { input: { name: string }; output: Record<string, never> };
  };
  entities: { todos: Todo; gates: { id: string; name: string } };
};

const listQuery = (list: string) => ({ todos: { $: { where: { list }, order: { serverCreatedAt: "asc" } } } }) as const;

/** The optimistic update the tests use: the new todo at the end of its list, with an id of its own. */
const addLocally = (store: OptimisticStore, input: { title: string; list: string }) => {
  const query = listQuery(input.list);
  const current = store.getQuery(query);
  if (current?.todos) store.setQuery(query, { todos: [...current.todos, { id: "local", ...input }] });
};

describe("optimistic updates against a real server", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("optimistic") });
  }, 60_000);
  afterAll(() => t?.stop());

  /** A client subscribed to one list, and what its listener saw (each result as "id:title" strings). */
  const watch = (list: string) => {
    const client = createClient<Release>({ url: t.url, token: t.serviceKey });
    const seen: string[][] = [];
    const stop = client.subscribe(listQuery(list), (result) =>
      seen.push(result.todos.map((todo) => `${todo.id === "local" ? "local" : "server"}:${todo.title}`)),
    );
    const last = () => JSON.stringify(seen.at(-1));
    const end = () => {
      stop();
      client.close();
    };
    return { client, seen, last, end };
  };

  test("the listener sees the local result at once, kept over a refresh during the call, then the server's", async () => {
    const { client, seen, last, end } = watch("a");
    try {
      await eventually(() => last() === "[]");
      const call = client.actions["todo.add"]({ title: "milk", list: "a", gate: "a" }, { optimistic: addLocally });
      // Synchronously, before the server heard of the call.
      expect(last()).toBe('["local:milk"]');

      // Another write to the list while the call waits: the update is applied again on top of it.
      await client.actions["todo.add"]({ title: "bread", list: "a" });
      await eventually(() => last() === '["server:bread","local:milk"]');

      await client.actions["todo.open"]({ name: "a" });
      const { output } = await call;
      expect(typeof output.id).toBe("string");
      // A result came during the call (bread's, maybe milk's): the update went with the answer.
      expect(last()).not.toContain("local:milk");
      await eventually(() => last() === '["server:bread","server:milk"]');
      expect(seen[0]).toEqual([]);
      expect(seen[1]).toEqual(["local:milk"]);
    } finally {
      end();
    }
  }, 30_000);

  test("a failed call's update is rolled back: the listener sees the server's result again", async () => {
    const { client, last, end } = watch("b");
    try {
      await client.actions["todo.add"]({ title: "kept", list: "b" });
      await eventually(() => last() === '["server:kept"]');
      const call = client.actions["todo.add"](
        { title: "refused", list: "b", gate: "b", fail: true },
        { optimistic: addLocally },
      );
      expect(last()).toBe('["server:kept","local:refused"]');
      await client.actions["todo.open"]({ name: "b" });
      const error = await call.catch((e) => e);
      expect(error).toBeInstanceOf(ActuateError);
      expect(error.code).toBe("action_failed");
      // Rolled back before the call's promise settles.
      expect(last()).toBe('["server:kept"]');
    } finally {
      end();
    }
  }, 30_000);

  test("a succeeded call whose write no result shows is dropped after the settle time", async () => {
    const { client, last, end } = watch("c");
    try {
      await eventually(() => last() === "[]");
      // The update shows the todo in list c; the action writes it to list d, which the client does not hold.
      await client.actions["todo.add"](
        { title: "elsewhere", list: "d" },
        { optimistic: (store, input) => addLocally(store, { ...input, list: "c" }) },
      );
      expect(last()).toBe('["local:elsewhere"]');
      await eventually(() => last() === "[]", 5_000);
    } finally {
      end();
    }
  }, 30_000);

  test("an update that throws fails the call and leaves the results as they were", async () => {
    const { client, last, end } = watch("e");
    try {
      await eventually(() => last() === "[]");
      const error = await client.actions["todo.add"](
        { title: "never", list: "e" },
        {
          optimistic: () => {
            throw new Error("a bug in the update");
          },
        },
      ).catch((e) => e);
      expect(error.message).toBe("a bug in the update");
      expect(last()).toBe("[]");
      expect((await client.query(listQuery("e"))).todos).toEqual([]);
    } finally {
      end();
    }
  }, 30_000);
});
