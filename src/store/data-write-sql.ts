import type { DataWrite } from "./data.ts";
import type { Statement } from "./data-sql.ts";
import type { Dialect } from "./dialect.ts";

/** A statement of an execution's data writes; when it must change a row, the message for when it does not. */
export interface WriteStatement extends Statement {
  mustChange?: string;
}

/**
 * The SQL of one execution's (or step's) writes, in order, for the transaction that stores its final
 * status (sqlite/data-writes.ts, pg/data-writes.ts run them), all within `environment`.
 */
export function writeStatements(dialect: Dialect, environment: number, writes: readonly DataWrite[]): WriteStatement[] {
  const statements: WriteStatement[] = [];
  const add = (sql: (p: (value: unknown) => string, json: (doc: unknown) => string) => string, mustChange?: string) => {
    const params: unknown[] = [];
    const text = sql(
      (value) => dialect.param(params, value),
      (doc) => dialect.json(params, doc),
    );
    statements.push({ sql: text, params, mustChange });
  };
  for (const w of writes) {
    switch (w.op) {
      case "insert":
        add(
          (p, json) =>
            `insert into data_entities (environment, id, entity, doc, created_at, updated_at) values (${p(environment)}, ${p(w.id)}, ${p(w.entity)}, ${json(w.doc)}, ${p(w.at)}, ${p(w.at)})`,
        );
        break;
      case "replace":
        add(
          (p, json) =>
            `update data_entities set doc = ${json(w.doc)}, updated_at = ${p(w.at)} where environment = ${p(environment)} and id = ${p(w.id)} and entity = ${p(w.entity)}`,
          `no ${w.entity} with id ${w.id} (deleted meanwhile)`,
        );
        break;
      case "delete":
        add(
          (p) =>
            `delete from data_links where environment = ${p(environment)} and (source_id = ${p(w.id)} or target_id = ${p(w.id)})`,
        );
        add(
          (p) =>
            `delete from data_entities where environment = ${p(environment)} and id = ${p(w.id)} and entity = ${p(w.entity)}`,
          `no ${w.entity} with id ${w.id} (deleted meanwhile)`,
        );
        break;
      case "link":
        if (w.replace.includes("source"))
          add(
            (p) =>
              `delete from data_links where environment = ${p(environment)} and link = ${p(w.link)} and source_id = ${p(w.sourceId)}`,
          );
        if (w.replace.includes("target"))
          add(
            (p) =>
              `delete from data_links where environment = ${p(environment)} and link = ${p(w.link)} and target_id = ${p(w.targetId)}`,
          );
        add(
          (p) => `insert into data_links (environment, link, source_id, target_id, created_at)
            select ${p(environment)}, ${p(w.link)}, ${p(w.sourceId)}, ${p(w.targetId)}, ${p(w.at)}
            where exists (select 1 from data_entities where environment = ${p(environment)} and id = ${p(w.sourceId)} and entity = ${p(w.sourceEntity)})
              and exists (select 1 from data_entities where environment = ${p(environment)} and id = ${p(w.targetId)} and entity = ${p(w.targetEntity)})
            on conflict do nothing`,
        );
        break;
      case "unlink":
        add(
          (p) =>
            `delete from data_links where environment = ${p(environment)} and link = ${p(w.link)} and source_id = ${p(w.sourceId)} and target_id = ${p(w.targetId)}`,
        );
        break;
      case "schedule": {
        const r = w.row;
        add(
          (
            p,
            json,
          ) => `insert into scheduled_invocations (environment, id, principal_kind, principal_id, principal_claims, action, input,
              request_id, due_at, scheduled_by, status, created_at, updated_at)
            values (${p(environment)}, ${p(r.id)}, ${p(r.principalKind)}, ${p(r.principalId)}, ${r.principalClaims === null ? "null" : json(r.principalClaims)},
              ${p(r.action)}, ${json(r.input)}, ${p(r.requestId)}, ${p(r.dueAt)}, ${p(r.scheduledBy)}, 'pending', ${p(r.createdAt)}, ${p(r.updatedAt)})`,
        );
        break;
      }
      case "cancelScheduled":
        add(
          (p) => `update scheduled_invocations set status = 'canceled', updated_at = ${p(w.at)}
            where environment = ${p(environment)} and id = ${p(w.id)} and status = 'pending' and (lease_expires_at is null or lease_expires_at < ${p(w.at)})
            ${w.principal ? `and principal_kind = ${p(w.principal.kind)} and principal_id = ${p(w.principal.id)}` : ""}`,
        );
        break;
    }
  }
  return statements;
}
