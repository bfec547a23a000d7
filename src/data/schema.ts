import { Kind, OptionalKind, type TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import type { LinkEnd, ReleaseDefinition, WhereClause } from "../sdk/index.ts";
import { SchemaError } from "./errors.ts";

export type AttrType = "string" | "number" | "boolean" | "json";

export interface AttrSpec {
  entity: string;
  label: string;
  type: AttrType;
  optional: boolean;
  indexed: boolean;
  unique: boolean;
}

export interface LinkSpec {
  name: string;
  forward: LinkEnd;
  reverse: LinkEnd;
}

/** A link as seen from one entity: `label` on `from` reaches `to`. */
export interface LinkSide {
  link: LinkSpec;
  direction: "forward" | "reverse";
  from: string;
  to: string;
  label: string;
  /** Whether one entity on this side reaches at most one on the other. */
  single: boolean;
}

export interface EntitySpec {
  name: string;
  attrs: ReadonlyMap<string, AttrSpec>;
  links: ReadonlyMap<string, LinkSide>;
  /** Validates a whole document (every attribute, none unknown). */
  check: TypeCheck<TSchema>;
  /** `true`/`false`, or a where-clause folded into every read by a caller without a service key. */
  view: boolean | WhereClause;
}

export interface DataSchema {
  entities: ReadonlyMap<string, EntitySpec>;
  links: ReadonlyMap<string, LinkSpec>;
}

/** The schema a manifest stores and `describe` shows. */
export interface SchemaManifest {
  entities: Record<string, Record<string, { type: AttrType; optional: boolean; indexed: boolean; unique: boolean }>>;
  links: Record<string, { forward: LinkEnd; reverse: LinkEnd }>;
  permissions: Record<string, { view: boolean | WhereClause }>;
}

const NAME = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
const RESERVED = new Set(["id", "$"]);

const fail = (message: string): never => {
  throw new SchemaError(`release.ts: ${message}`);
};

/** Checks and indexes the entities, links and permissions a release declares. */
export function compileDataSchema(definition: ReleaseDefinition | null): DataSchema {
  const entityDefs = definition?.entities ?? {};
  const linkDefs = definition?.links ?? {};
  const permissionDefs = definition?.permissions ?? {};
  const sides = new Map<string, Map<string, LinkSide>>();
  const attrsOf = new Map<string, Map<string, AttrSpec>>();

  for (const [entity, attrs] of Object.entries(entityDefs)) {
    if (!NAME.test(entity)) fail(`entity name "${entity}" must be letters, digits and _ (starting with a letter)`);
    const specs = new Map<string, AttrSpec>();
    for (const [label, schema] of Object.entries(attrs)) {
      if (!NAME.test(label) || RESERVED.has(label))
        fail(`${entity}.${label}: attribute names must be letters, digits and _, and not "id"`);
      specs.set(label, attrSpec(entity, label, schema));
    }
    attrsOf.set(entity, specs);
    sides.set(entity, new Map());
  }

  const links = new Map<string, LinkSpec>();
  for (const [name, def] of Object.entries(linkDefs)) {
    const link: LinkSpec = { name, forward: def?.forward, reverse: def?.reverse };
    for (const [direction, end, other] of [
      ["forward", link.forward, link.reverse],
      ["reverse", link.reverse, link.forward],
    ] as const) {
      if (!end || !other) fail(`link ${name} needs forward and reverse ends`);
      if (!attrsOf.has(end.on)) fail(`link ${name}: no entity "${end.on}"`);
      if (end.has !== "one" && end.has !== "many") fail(`link ${name}: has must be "one" or "many"`);
      if (!NAME.test(end.label) || RESERVED.has(end.label))
        fail(`link ${name}: label "${end.label}" is not a valid name`);
      if (attrsOf.get(end.on)?.has(end.label) || sides.get(end.on)?.has(end.label)) {
        fail(`link ${name}: ${end.on} already has an attribute or link named ${end.label}`);
      }
      sides
        .get(end.on)
        ?.set(end.label, { link, direction, from: end.on, to: other.on, label: end.label, single: end.has === "one" });
    }
    links.set(name, link);
  }

  for (const entity of Object.keys(permissionDefs)) {
    if (!attrsOf.has(entity)) fail(`permissions name an unknown entity "${entity}"`);
  }

  const entities = new Map<string, EntitySpec>();
  for (const [name, attrs] of attrsOf) {
    const view = permissionDefs[name]?.view ?? false;
    if (typeof view !== "boolean" && (typeof view !== "object" || view === null || Array.isArray(view))) {
      fail(`permissions.${name}.view must be true, false or a where-clause object`);
    }
    entities.set(name, {
      name,
      attrs,
      links: sides.get(name) ?? new Map(),
      check: TypeCompiler.Compile({
        type: "object",
        properties: Object.fromEntries(Object.entries(entityDefs[name] ?? {})),
        required: [...attrs.values()].filter((a) => !a.optional).map((a) => a.label),
        additionalProperties: false,
        [Kind]: "Object",
      } as unknown as TSchema),
      view,
    });
  }
  return { entities, links };
}

function attrSpec(entity: string, label: string, schema: TSchema): AttrSpec {
  if (!schema || typeof schema !== "object" || !(Kind in schema))
    fail(`${entity}.${label} must be a schema built with Type`);
  const kind = schema[Kind] as string;
  const type: AttrType =
    kind === "String"
      ? "string"
      : kind === "Number" || kind === "Integer"
        ? "number"
        : kind === "Boolean"
          ? "boolean"
          : "json";
  const indexed = schema.indexed === true || schema.unique === true;
  if (indexed && type === "json") fail(`${entity}.${label}: only string, number and boolean attributes can be indexed`);
  return {
    entity,
    label,
    type,
    optional: schema[OptionalKind] === "Optional",
    indexed,
    unique: schema.unique === true,
  };
}

/** The attributes declared indexed (unique ones enforce uniqueness): their indexes exist before a release is stored. */
export function indexedAttrs(schema: DataSchema): AttrSpec[] {
  return [...schema.entities.values()].flatMap((entity) => [...entity.attrs.values()].filter((a) => a.indexed));
}

export function schemaManifest(schema: DataSchema): SchemaManifest {
  const entities: SchemaManifest["entities"] = {};
  const permissions: SchemaManifest["permissions"] = {};
  for (const [name, entity] of schema.entities) {
    entities[name] = Object.fromEntries(
      [...entity.attrs.values()].map((a) => [
        a.label,
        { type: a.type, optional: a.optional, indexed: a.indexed, unique: a.unique },
      ]),
    );
    permissions[name] = { view: entity.view };
  }
  const links = Object.fromEntries(
    [...schema.links.values()].map((l) => [l.name, { forward: l.forward, reverse: l.reverse }]),
  );
  return { entities, links, permissions };
}
