/**
 * A small Prometheus registry (text format 0.0.4): counters, gauges and histograms with fixed label
 * names. Written here rather than taken from prom-client, which costs a start ~100 ms and ~14 MiB
 * (docs/decisions/observability.md, "Metrics"); on the hot path an update is one Map lookup.
 */

type Labels = readonly string[];

/** Series beyond this many per metric fold into one whose labels all read "other": a bound on memory, whatever the callers send. */
const MAX_SERIES = 2_000;
const OTHER = "other";

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const escapeHelp = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

function labelText(names: Labels, values: Labels, extra?: string): string {
  const parts = names.map((name, i) => `${name}="${escapeLabel(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

abstract class Metric<S> {
  /** By label values: the values, the state, and their `{…}` text, made once (a scrape of 20,000 series only joins). */
  protected readonly series = new Map<string, { values: Labels; state: S; text: string }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: Labels,
    private readonly maxSeries = MAX_SERIES,
  ) {}

  protected abstract fresh(): S;
  abstract readonly type: "counter" | "gauge" | "histogram";

  protected stateOf(values: Labels): S {
    const key = values.length === 1 ? (values[0] as string) : values.join("\u0000");
    let found = this.series.get(key);
    if (found === undefined) {
      if (this.series.size >= this.maxSeries) return this.stateOf(this.labelNames.map(() => OTHER));
      found = { values: [...values], state: this.fresh(), text: labelText(this.labelNames, values) };
      this.series.set(key, found);
    }
    return found.state;
  }

  protected header(): string {
    return `# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n`;
  }

  abstract render(): string;
}

export class Counter extends Metric<{ value: number }> {
  readonly type = "counter";
  protected fresh() {
    return { value: 0 };
  }
  inc(values: Labels = [], by = 1): void {
    this.stateOf(values).value += by;
  }
  render(): string {
    let text = this.header();
    for (const series of this.series.values())
      text += `${this.name}${series.text} ${formatValue(series.state.value)}\n`;
    return text;
  }
}

/** A gauge set by its owner, or read at each scrape through `collect` (then also a counter kept elsewhere, as the CPU time). */
export class Gauge extends Metric<{ value: number }> {
  constructor(
    name: string,
    help: string,
    labelNames: Labels = [],
    private readonly collect?: () => Iterable<[Labels, number]> | number,
    readonly type: "gauge" | "counter" = "gauge",
  ) {
    super(name, help, labelNames);
  }
  protected fresh() {
    return { value: 0 };
  }
  set(values: Labels, value: number): void {
    this.stateOf(values).value = value;
  }
  render(): string {
    if (this.collect) {
      const collected = this.collect();
      this.series.clear();
      if (typeof collected === "number") this.set([], collected);
      else for (const [values, value] of collected) this.set(values, value);
    }
    let text = this.header();
    for (const series of this.series.values())
      text += `${this.name}${series.text} ${formatValue(series.state.value)}\n`;
    return text;
  }
}

export class Histogram extends Metric<{ counts: number[]; sum: number; count: number }> {
  readonly type = "histogram";
  constructor(
    name: string,
    help: string,
    labelNames: Labels,
    private readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
  }
  protected fresh() {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }
  observe(values: Labels, value: number): void {
    const state = this.stateOf(values);
    state.sum += value;
    state.count++;
    const at = this.buckets.findIndex((bound) => value <= bound);
    if (at >= 0) state.counts[at] = (state.counts[at] as number) + 1;
  }
  render(): string {
    let text = this.header();
    for (const { values, state } of this.series.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += state.counts[i] as number;
        text += `${this.name}_bucket${labelText(this.labelNames, values, `le="${formatValue(bound)}"`)} ${cumulative}\n`;
      });
      text += `${this.name}_bucket${labelText(this.labelNames, values, 'le="+Inf"')} ${state.count}\n`;
      text += `${this.name}_sum${labelText(this.labelNames, values)} ${formatValue(state.sum)}\n`;
      text += `${this.name}_count${labelText(this.labelNames, values)} ${state.count}\n`;
    }
    return text;
  }
}

export class Registry {
  private readonly metrics: { render(): string }[] = [];
  private readonly beforeScrape: (() => Promise<void>)[] = [];

  register<M extends { render(): string }>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  /** Work done before each scrape (reading a value that needs the database), errors left to the caller. */
  refreshing(refresh: () => Promise<void>): void {
    this.beforeScrape.push(refresh);
  }

  /** The text exposition format: what `GET /metrics` answers. */
  async render(): Promise<string> {
    await Promise.all(this.beforeScrape.map((refresh) => refresh()));
    return this.metrics.map((m) => m.render()).join("");
  }
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
