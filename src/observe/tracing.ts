/**
 * Spans as the server sees them: start one (under a parent span, or a W3C `traceparent` from a caller),
 * add attributes, end it. Without OTEL_EXPORTER_OTLP_ENDPOINT the tracer is NO_TRACER, whose spans are
 * one shared object that does nothing; OpenTelemetry (observe/otel.ts) is then never imported.
 */

export type SpanAttributes = Record<string, string | number | boolean>;

export interface Span {
  setAttributes(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed (OpenTelemetry status ERROR) with this message. */
  fail(message: string): void;
  end(): void;
}

/** A parent: a span of ours, or the value of a caller's `traceparent` (HTTP header or MCP `_meta`). */
export type SpanParent = Span | string | null | undefined;

export interface Tracer {
  readonly enabled: boolean;
  start(name: string, parent?: SpanParent, attributes?: SpanAttributes): Span;
  /** Sends what is still buffered, then stops (at server stop). */
  shutdown(): Promise<void>;
}

export const NO_SPAN: Span = {
  setAttributes() {},
  rename() {},
  fail() {},
  end() {},
};

export const NO_TRACER: Tracer = {
  enabled: false,
  start: () => NO_SPAN,
  shutdown: async () => {},
};
