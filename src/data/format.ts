import type { QueryResult, ResultEntity } from "./query.ts";
import type { DataSchema } from "./schema.ts";

/** `?format=objects`: `{ <entity>: [ { id, …attributes, <link label>: [ … ] | {…} | null } ] }`. */
export function toObjects(result: QueryResult): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const [name, { entities }] of result) out[name] = entities.map(toObject);
  return out;
}

function toObject(entity: ResultEntity): Record<string, unknown> {
  const object: Record<string, unknown> = { id: entity.row.id, ...entity.row.doc };
  for (const [label, { side, entities }] of entity.children) {
    const children = entities.map(toObject);
    object[label] = side.single ? (children[0] ?? null) : children;
  }
  return object;
}

/** Attribute ids by `entity.label` (`entity.id` for the id attribute; a link by both of its ends). */
export type AttrIds = ReadonlyMap<string, string>;

export interface AttrEntry {
  id: string;
  "forward-identity": [string, string, string];
  "reverse-identity"?: [string, string, string];
  "value-type": "blob" | "ref";
  cardinality: "one" | "many";
  "unique?": boolean;
  "index?": boolean;
}

/** Every (entity, label) whose id the triple format needs, in a stable order. */
export function attrKeys(schema: DataSchema): string[] {
  const keys: string[] = [];
  for (const entity of schema.entities.values()) {
    keys.push(`${entity.name}.id`, ...[...entity.attrs.keys()].map((label) => `${entity.name}.${label}`));
  }
  for (const link of schema.links.values()) {
    keys.push(`${link.forward.on}.${link.forward.label}`, `${link.reverse.on}.${link.reverse.label}`);
  }
  return keys;
}

export function attrEntries(schema: DataSchema, ids: AttrIds): AttrEntry[] {
  const id = (key: string) => ids.get(key) as string;
  const entries: AttrEntry[] = [];
  for (const entity of schema.entities.values()) {
    entries.push({
      id: id(`${entity.name}.id`),
      "forward-identity": [id(`${entity.name}.id`), entity.name, "id"],
      "value-type": "blob",
      cardinality: "one",
      "unique?": true,
      "index?": true,
    });
    for (const attr of entity.attrs.values()) {
      const key = `${entity.name}.${attr.label}`;
      entries.push({
        id: id(key),
        "forward-identity": [id(key), entity.name, attr.label],
        "value-type": "blob",
        cardinality: "one",
        "unique?": attr.unique,
        "index?": attr.indexed,
      });
    }
  }
  for (const link of schema.links.values()) {
    const forward = `${link.forward.on}.${link.forward.label}`;
    const reverse = `${link.reverse.on}.${link.reverse.label}`;
    entries.push({
      id: id(forward),
      "forward-identity": [id(forward), link.forward.on, link.forward.label],
      "reverse-identity": [id(reverse), link.reverse.on, link.reverse.label],
      "value-type": "ref",
      cardinality: link.forward.has,
      "unique?": link.reverse.has === "one",
      "index?": false,
    });
  }
  return entries;
}

type Triple = [string, string, unknown, number];

/** The default format: every fact of the result as `[entityId, attrId, value, createdAtMs]`, links on their forward side. */
export function toTriples(result: QueryResult, schema: DataSchema, ids: AttrIds) {
  // An entity reached twice (under two parents) gives the same facts: each is kept once, by its entity and
  // attribute (an attribute has one value per entity), or for a link by both ends (the value is the target).
  const triples = new Map<string, Triple>();
  const add = (key: string, triple: Triple) => {
    if (!triples.has(key)) triples.set(key, triple);
  };
  const visit = (entityName: string, entity: ResultEntity) => {
    const { id, doc, createdAt } = entity.row;
    const idAttr = ids.get(`${entityName}.id`) as string;
    add(`${id}\u0000${idAttr}`, [id, idAttr, id, createdAt]);
    for (const [label, value] of Object.entries(doc)) {
      const attrId = ids.get(`${entityName}.${label}`);
      if (attrId) add(`${id}\u0000${attrId}`, [id, attrId, value, createdAt]);
    }
    for (const { side, entities } of entity.children.values()) {
      const link = side.link;
      const linkAttr = ids.get(`${link.forward.on}.${link.forward.label}`) as string;
      for (const child of entities as (ResultEntity & { linkedAt: number })[]) {
        const [source, target] = side.direction === "forward" ? [id, child.row.id] : [child.row.id, id];
        add(`${source}\u0000${linkAttr}\u0000${target}`, [source, linkAttr, target, child.linkedAt]);
        visit(side.to, child);
      }
    }
  };
  for (const [name, { entities }] of result) for (const entity of entities) visit(name, entity);
  return {
    result: [{ data: { "datalog-result": { "join-rows": [[...triples.values()]] } }, "child-nodes": [] }],
    attrs: attrEntries(schema, ids),
  };
}
