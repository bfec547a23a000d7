import { Type } from "@sinclair/typebox";
import { EXECUTION_STATUSES, RUN_STATUSES } from "../store/statuses.ts";

/**
 * What the executions and runs lists may be filtered by, one set of rules for every way of asking:
 * `GET /executions` and `GET /runs` (their query strings) and the session socket's live lists
 * (`subscribe-executions`, `subscribe-runs`).
 */
const name = () => Type.Optional(Type.String({ pattern: "^[A-Za-z0-9_.-]{1,200}$" }));

export const executionListFilter = {
  action: name(),
  status: Type.Optional(Type.Union(EXECUTION_STATUSES.map((s) => Type.Literal(s)))),
  /** `<kind>:<id>`, service keys only: one caller's executions. */
  caller: Type.Optional(Type.String({ pattern: "^(user|service):[^\\u0000-\\u001f]{1,256}$" })),
};

export const runListFilter = {
  workflow: name(),
  status: Type.Optional(Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)))),
};
