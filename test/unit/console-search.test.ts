import { describe, expect, test } from "bun:test";
import { hrefOf, type Route, routeOf } from "../../src/console/route-hash.ts";
import { classify, matchingNames } from "../../src/console/search-query.ts";

describe("the console's search box", () => {
  test("a UUID is an id (execution, run or request), a kind:id a caller, anything else a name or path", () => {
    const id = "0193A0B2-7C3D-7E4F-8A9B-0C1D2E3F4A5B";
    expect(classify(`  ${id} `)).toEqual({ kind: "id", id: id.toLowerCase() });
    expect(classify("user:alice")).toEqual({ kind: "caller", caller: "user:alice" });
    expect(classify("service:schedule:nightly")).toEqual({ kind: "caller", caller: "service:schedule:nightly" });
    expect(classify("todos.add")).toEqual({ kind: "text", text: "todos.add" });
    expect(classify("docs/report")).toEqual({ kind: "text", text: "docs/report" });
    expect(classify("team:x")).toEqual({ kind: "text", text: "team:x" });
    expect(classify("   ")).toEqual({ kind: "empty" });
  });

  test("action names: those that begin with the text first, then those that hold it, any case", () => {
    const names = ["wf.gated", "todos.add", "todos.list", "admin.addUser", "echo"];
    expect(matchingNames(names, "ADD")).toEqual(["admin.addUser", "todos.add"]);
    expect(matchingNames(names, "todos")).toEqual(["todos.add", "todos.list"]);
    expect(matchingNames(names, "o", 2)).toEqual(["echo", "todos.add"]);
  });
});

describe("every list's filters in the hash", () => {
  const routes: Route[] = [
    { page: "executions", filters: { action: "todos.add", status: "failed" } },
    { page: "executions", id: "e1", filters: {} },
    { page: "runs", filters: { workflow: "wf.gated", status: "sleeping" } },
    { page: "data", entity: "todos", browse: { where: '{"done":false}', orderBy: "title", direction: "desc" } },
    { page: "files", prefix: "docs/a b" },
    { page: "actions", action: "todos.add", from: "e1" },
    { page: "overview" },
  ];

  test("each route is read back from its own link as it was", () => {
    for (const route of routes) expect(routeOf(hrefOf(route))).toMatchObject(route);
  });

  test("empty filters leave the link plain", () => {
    expect(hrefOf({ page: "runs", filters: { workflow: "" } })).toBe("#/runs");
    expect(hrefOf({ page: "files" })).toBe("#/files");
    expect(hrefOf({ page: "executions", filters: { action: "a", status: "failed" } })).toBe(
      "#/executions?action=a&status=failed",
    );
  });
});
