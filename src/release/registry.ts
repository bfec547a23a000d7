import { indexedAttrs } from "../data/schema.ts";
import { loggable } from "../lib/database-errors.ts";
import { LoopFailures } from "../lib/loop-failures.ts";
import type { Log } from "../observe/log.ts";
import type { Store } from "../store/store.ts";
import { asRelease, type LoadedRelease, loadBundle } from "./load.ts";

/**
 * The release this process serves. Swapping is one reference assignment: a request holds the release
 * it started with until it ends, so a switch never changes code under a call in flight.
 */
export class ReleaseRegistry {
  private active: LoadedRelease | null = null;
  private revision = -1;
  private readonly loaded = new Map<string, LoadedRelease>();
  private refreshing: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly polls: LoopFailures;
  /** Told of each new revision before it is served (the environment's variables are read again). */
  private readonly followers: ((release: LoadedRelease | null) => Promise<void>)[] = [];

  constructor(
    private readonly store: Store,
    private readonly bundlesDir: string,
    private readonly log: Log = () => {},
  ) {
    this.polls = new LoopFailures("loading the active release", log);
  }

  /**
   * `follower` is awaited on every change of the environment's revision (an activation, a variable set or
   * unset), with the release about to be served, before it is; if it throws, the revision is looked at again.
   */
  follow(follower: (release: LoadedRelease | null) => Promise<void>): void {
    this.followers.push(follower);
  }

  current(): LoadedRelease | null {
    return this.active;
  }

  /** Loads the active release if it changed since the last look (one cheap row read when it did not). */
  refresh(): Promise<void> {
    this.refreshing ??= this.load().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /**
   * Loads the active release as the database holds it now: a look already under way may have read it
   * before a change this caller just made, so this waits it out and looks again.
   */
  async reload(): Promise<void> {
    while (this.refreshing) await this.refreshing.catch(() => {});
    await this.refresh();
  }

  /** Polls the active release so a publish or activation by the CLI or another instance is served within `intervalMs`. */
  watch(intervalMs: number): void {
    this.timer ??= setInterval(() => {
      this.refresh().then(
        () => this.polls.worked(),
        (error) => this.polls.failed(error),
      );
    }, intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Any stored release, loaded once and then kept: a workflow run stays on the release it started with,
   * whatever is active, until it ends.
   */
  async version(version: string): Promise<LoadedRelease> {
    const loaded = this.loaded.get(version);
    if (loaded) return loaded;
    const row = await this.store.releases.get(version);
    if (!row) throw new Error(`release ${version} is not stored`);
    const release = asRelease(await loadBundle({ code: row.bundle, hash: row.bundleHash }, this.bundlesDir), version);
    this.loaded.set(version, release);
    return release;
  }

  /**
   * The release's data indexes, as its publication made them: a migration that rebuilt the entities'
   * table (SQLite's 0020, environments) dropped them, and a query ordered by one names its index. Made
   * once a switch; a failure is logged and the release still goes live (it was checked at publication).
   */
  private async ensureIndexes(release: LoadedRelease): Promise<void> {
    try {
      await this.store.data.ensureIndexes(indexedAttrs(release.data));
    } catch (error) {
      this.log(`release ${release.version}: its data indexes could not be made: ${loggable(error)}`, { level: "warn" });
    }
  }

  private async tell(release: LoadedRelease | null): Promise<void> {
    for (const follower of this.followers) await follower(release);
  }

  private async load(): Promise<void> {
    const { version, revision } = await this.store.releases.active();
    if (revision === this.revision) return;
    if (!version) {
      await this.tell(this.active);
      this.revision = revision;
      return;
    }
    const release = await this.version(version);
    const switched = this.active?.version !== version;
    if (switched) await this.ensureIndexes(release);
    await this.tell(release);
    this.active = release;
    this.revision = revision;
    if (switched) this.log(`release ${version} is live (${release.actions.size} actions)`);
  }
}
