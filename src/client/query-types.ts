// Types only: what a query may say and what it answers, from a release's entities and links. No runtime code.

import type { ActuateError } from "./errors.ts";

/** One end of a link as the generated `Release` lists it under the entity it starts from. */
export interface LinkType {
  entity: string;
  has: "one" | "many";
}

type Entities<R> = R extends { entities: infer E extends Record<string, unknown> } ? E : Record<string, unknown>;
type NoLinks = Record<never, LinkType>;
type LinksOf<R, E> = R extends { links: infer L } ? (E extends keyof L ? L[E] : NoLinks) : NoLinks;
type Attributes<R, E> = E extends keyof Entities<R> ? Entities<R>[E] : never;
type Target<R, E, Label> = Label extends keyof LinksOf<R, E>
  ? LinksOf<R, E>[Label] extends { entity: infer T }
    ? T
    : never
  : never;

/** Whether the release names its entities (a generated `Release`); without them, queries stay loose. */
type Typed<R> = string extends keyof Entities<R> ? false : true;

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/** The operators `where` takes on a value of type `V` (`$like`, `$ilike` on strings only). */
export type Operators<V, Like extends boolean = [V] extends [string] ? true : false> = {
  $in?: readonly V[];
  $not?: V;
  $ne?: V;
  $isNull?: boolean;
  $gt?: V;
  $gte?: V;
  $lt?: V;
  $lte?: V;
} & (Like extends true ? { $like?: string; $ilike?: string } : unknown);

/** What one `where` key may be: the value, `null` (absent), or operators; a JSON attribute only tests absence. */
type Condition<V> = unknown extends V ? null | { $isNull?: boolean } : V | null | Operators<V>;

/** The hops left to a dotted path through links (`"author.profile.bio"`): up to four, finite for the checker. */
type Hops = [never, 0, 1, 2];

type Paths<R, E, Depth extends number = 3> =
  | (keyof Attributes<R, E> & string)
  | ([Depth] extends [never]
      ? never
      : {
          [Label in keyof LinksOf<R, E> & string]-?: `${Label}.${Paths<R, Target<R, E, Label>, Hops[Depth]>}`;
        }[keyof LinksOf<R, E> & string]);

type ValueAt<R, E, Path> = Path extends `${infer Label}.${infer Rest}`
  ? Label extends keyof LinksOf<R, E>
    ? ValueAt<R, Target<R, E, Label>, Rest>
    : never
  : Path extends "id"
    ? string
    : Exclude<Attributes<R, E>[Path & keyof Attributes<R, E>], undefined>;

/** A `where` clause on entity `E`: its attributes, `id`, dotted paths through links, `and` / `or`. */
export type Where<R, E> = {
  [Path in Paths<R, E>]?: Path extends "id" | `${string}.id`
    ? string | null | Operators<string, false>
    : Condition<ValueAt<R, E, Path>>;
} & { and?: readonly Where<R, E>[]; or?: readonly Where<R, E>[] };

/** Attributes a query may order by: any but JSON ones, or when the server stored the row. */
type OrderKey<R, E> =
  | "serverCreatedAt"
  | {
      [Label in keyof Attributes<R, E>]-?: Label extends "id"
        ? never
        : unknown extends Attributes<R, E>[Label]
          ? never
          : Label;
    }[keyof Attributes<R, E>];

/** `$`: `offset` at the top level only; `order` names one attribute. */
export type QueryOptions<R, E, Top extends boolean = true> = {
  where?: Where<R, E>;
  limit?: number;
  order?: { [Key in OrderKey<R, E>]: { [K in Key]: "asc" | "desc" } }[OrderKey<R, E>];
} & (Top extends true ? { offset?: number } : unknown);

/** One level of a query on entity `E`: its `$` and the links to read. */
export type QueryNode<R, E, Top extends boolean = false> = { $?: QueryOptions<R, E, Top> } & {
  [Label in keyof LinksOf<R, E>]?: QueryNode<R, Target<R, E, Label>>;
};

/** A query on the release's entities (`{ books: { $: { where: … }, author: {} } }`); any object without a typed release. */
export type QueryOf<R> =
  Typed<R> extends true ? { [E in keyof Entities<R>]?: QueryNode<R, E, true> } : Record<string, unknown>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** An entity's row with the links `Node` reads: a `has: "one"` end an object or `null`, a `has: "many"` an array. */
export type Row<R, E, Node> = Simplify<
  Attributes<R, E> & {
    -readonly [Label in keyof Node & keyof LinksOf<R, E>]: LinksOf<R, E>[Label] extends { has: "one" }
      ? Row<R, Target<R, E, Label>, Node[Label]> | null
      : Row<R, Target<R, E, Label>, Node[Label]>[];
  }
>;

/** What a query answers as objects (the default format, and live queries): each entity's rows, nested as asked. */
export type QueryResult<R, Q> =
  Typed<R> extends true
    ? { -readonly [E in keyof Q & keyof Entities<R>]: Row<R, E, Q[E]>[] }
    : { -readonly [E in keyof Q]: unknown[] };

/** `Actual` with every key the shape does not know of turned into `never`, at every depth (object literals nest). */
export type Exact<Actual, Shape> = unknown extends Shape
  ? Actual
  : Actual extends readonly unknown[]
    ? Shape extends readonly (infer Item)[]
      ? { [K in keyof Actual]: Exact<Actual[K], Item> }
      : Actual
    : Actual extends object
      ? Shape extends object
        ? { [K in keyof Actual]: K extends keyof Shape ? Exact<Actual[K], Exclude<Shape[K], undefined>> : never }
        : Actual
      : Actual;

/** The check a query literal passes besides its constraint: no unknown entity, link, attribute or `$` key. */
export type Checked<R, Q> = Typed<R> extends true ? Exact<Q, QueryOf<R>> : unknown;

/** `?format=triples`: every fact as `[entityId, attrId, value, createdAtMs]`, and the attributes they name. */
export interface TriplesAnswer {
  result: { data: { "datalog-result": { "join-rows": [string, string, Json, number][][] } }; "child-nodes": [] }[];
  attrs: {
    id: string;
    "forward-identity": [string, string, string];
    "reverse-identity"?: [string, string, string];
    "value-type": "blob" | "ref";
    cardinality: "one" | "many";
    "unique?": boolean;
    "index?": boolean;
  }[];
}

/** `client.subscribe`: calls `listener` with the query's result now and after every change; answers how to stop. */
export type Subscribe<R> = <const Q extends QueryOf<R>>(
  query: Q & Checked<R, Q>,
  listener: (result: QueryResult<R, Q>) => void,
  onError?: (error: ActuateError) => void,
) => () => void;

/** `client.query`: reads once; objects by default, or triples. */
export interface ReadQuery<R> {
  <const Q extends QueryOf<R>>(
    query: Q & Checked<R, Q>,
    options?: { format?: "objects"; signal?: AbortSignal | undefined },
  ): Promise<QueryResult<R, Q>>;
  <const Q extends QueryOf<R>>(
    query: Q & Checked<R, Q>,
    options: { format: "triples"; signal?: AbortSignal | undefined },
  ): Promise<TriplesAnswer>;
  <const Q extends QueryOf<R>>(
    query: Q & Checked<R, Q>,
    options: { format?: "objects" | "triples"; signal?: AbortSignal | undefined },
  ): Promise<QueryResult<R, Q> | TriplesAnswer>;
}

/**
 * What a hook needs of a client: its `subscribe`. The hook infers the release from it, since `Subscribe<R>`
 * is a named generic interface the client's `subscribe` is typed by.
 */
export interface QueryClient<R> {
  subscribe: Subscribe<R>;
}
