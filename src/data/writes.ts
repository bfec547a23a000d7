import { findUnsupportedCharacter, UNSUPPORTED_CHARACTERS } from "../lib/json-text.ts";
import { isObject } from "../lib/values.ts";
import type { DataContext } from "../sdk/index.ts";
import type { DataWrite } from "../store/data.ts";
import { WriteRejected } from "./errors.ts";
import type { DataSchema, EntitySpec } from "./schema.ts";

/**
 * `ctx.db` of one execution: validates each change against the release schema when it is asked for
 * (so the handler sees the error where it made it) and keeps it until the execution settles.
 */
export class ExecutionData implements Omit<DataContext, "query"> {
  readonly writes: DataWrite[] = [];
  private readonly pending = new Map<string, { entity: string; doc: Record<string, unknown> }>();

  constructor(
    private readonly schema: DataSchema,
    private readonly readDoc: (entity: string, id: string) => Promise<Record<string, unknown> | null>,
    private readonly now: () => number,
  ) {}

  async create(entityName: string, data: Record<string, unknown>): Promise<string> {
    const entity = this.entity(entityName);
    const doc = this.checked(entity, data, "create");
    const id = Bun.randomUUIDv7();
    this.pending.set(id, { entity: entity.name, doc });
    this.writes.push({ op: "insert", entity: entity.name, id, doc, at: this.now() });
    return id;
  }

  async update(entityName: string, id: string, patch: Record<string, unknown>): Promise<void> {
    const entity = this.entity(entityName);
    const current = await this.current(entity, id);
    if (!isObject(patch)) throw new WriteRejected(`update ${entity.name}: the patch must be an object`);
    const merged = { ...current };
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined || value === null) delete merged[key];
      else merged[key] = value;
    }
    const doc = this.checked(entity, merged, "update");
    this.pending.set(id, { entity: entity.name, doc });
    this.writes.push({ op: "replace", entity: entity.name, id, doc, at: this.now() });
  }

  async delete(entityName: string, id: string): Promise<void> {
    const entity = this.entity(entityName);
    await this.current(entity, id);
    this.pending.delete(id);
    this.writes.push({ op: "delete", entity: entity.name, id });
  }

  async link(entityName: string, id: string, label: string, targetId: string): Promise<void> {
    const { side, entity } = this.side(entityName, label);
    const target = this.entity(side.to);
    await this.current(entity, id);
    await this.current(target, targetId);
    const [sourceId, sourceEntity, tId, targetEntity] =
      side.direction === "forward"
        ? [id, entity.name, targetId, target.name]
        : [targetId, target.name, id, entity.name];
    const replace: ("source" | "target")[] = [];
    // A has-one end keeps one partner: linking again moves the link.
    if (side.link.forward.has === "one") replace.push("source");
    if (side.link.reverse.has === "one") replace.push("target");
    this.writes.push({
      op: "link",
      link: side.link.name,
      sourceId,
      sourceEntity,
      targetId: tId,
      targetEntity,
      at: this.now(),
      replace,
    });
  }

  async unlink(entityName: string, id: string, label: string, targetId: string): Promise<void> {
    const { side } = this.side(entityName, label);
    const [sourceId, tId] = side.direction === "forward" ? [id, targetId] : [targetId, id];
    this.writes.push({ op: "unlink", link: side.link.name, sourceId, targetId: tId });
  }

  /** The entities whose rows these writes change (both ends of a link). */
  touched(): string[] {
    const names = new Set<string>();
    for (const w of this.writes) {
      if (w.op === "link") names.add(w.sourceEntity).add(w.targetEntity);
      else if (w.op === "unlink") {
        const link = this.schema.links.get(w.link);
        if (link) names.add(link.forward.on).add(link.reverse.on);
      } else if (w.op !== "schedule" && w.op !== "cancelScheduled") names.add(w.entity);
    }
    return [...names];
  }

  private entity(name: string): EntitySpec {
    const entity = this.schema.entities.get(name);
    if (!entity) {
      const declared = [...this.schema.entities.keys()];
      throw new WriteRejected(
        `unknown entity ${JSON.stringify(name)}: ${declared.length > 0 ? `release.ts declares ${declared.join(", ")}` : "release.ts declares no entities"}; add it to defineRelease({ entities })`,
      );
    }
    return entity;
  }

  private side(entityName: string, label: string) {
    const entity = this.entity(entityName);
    const side = entity.links.get(label);
    if (!side) throw new WriteRejected(`${entity.name} has no link named ${JSON.stringify(label)}`);
    return { entity, side };
  }

  /** The document as this execution sees it: its own changes first, then the store. */
  private async current(entity: EntitySpec, id: string): Promise<Record<string, unknown>> {
    if (typeof id !== "string") throw new WriteRejected(`${entity.name}: ids are strings`);
    const mine = this.pending.get(id);
    if (mine?.entity === entity.name) return mine.doc;
    const deleted = this.writes.some((w) => w.op === "delete" && w.id === id);
    const stored = deleted ? null : await this.readDoc(entity.name, id);
    if (!stored) throw new WriteRejected(`no ${entity.name} with id ${id}`);
    return stored;
  }

  private checked(entity: EntitySpec, data: unknown, verb: string): Record<string, unknown> {
    if (!isObject(data)) throw new WriteRejected(`${verb} ${entity.name}: the data must be an object`);
    const doc = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
    if (!entity.check.Check(doc)) {
      const first = [...entity.check.Errors(doc)][0];
      throw new WriteRejected(
        `${verb} ${entity.name}: ${first?.path || "/"} ${first?.message ?? "does not fit the schema"}`,
      );
    }
    const unsupported = findUnsupportedCharacter(doc);
    if (unsupported !== null) {
      throw new WriteRejected(
        `${verb} ${entity.name}: ${unsupported || "/"} holds ${UNSUPPORTED_CHARACTERS}, which cannot be stored`,
      );
    }
    checkIndexedSizes(entity, doc, verb);
    return doc;
  }
}

/**
 * The bytes a string of an indexed (or unique) attribute may hold: each is a key of a database index,
 * and PostgreSQL refuses an index row over 2,704 bytes (8,191 compressed), which SQLite would take.
 * Checked here so that both refuse alike, where the handler sees it.
 */
const INDEXED_STRING_MAX_BYTES = 2048;

function checkIndexedSizes(entity: EntitySpec, doc: Record<string, unknown>, verb: string) {
  for (const [label, value] of Object.entries(doc)) {
    if (typeof value !== "string" || !entity.attrs.get(label)?.indexed) continue;
    const bytes = Buffer.byteLength(value);
    if (bytes > INDEXED_STRING_MAX_BYTES) {
      throw new WriteRejected(
        `${verb} ${entity.name}: /${label} is indexed and holds at most ${INDEXED_STRING_MAX_BYTES} bytes (UTF-8); this value has ${bytes}`,
      );
    }
  }
}
