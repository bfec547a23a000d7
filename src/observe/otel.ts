/**
 * The OpenTelemetry tracer: imported (by main.ts, through import()) only when OTEL_EXPORTER_OTLP_ENDPOINT
 * is set. Parents are passed explicitly (a span of ours, or a caller's traceparent), so no context
 * manager is installed and nothing else in the process is instrumented.
 */
import {
  type Context,
  type Span as OtelSpan,
  type Tracer as OtelTracer,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Span, SpanAttributes, SpanParent, Tracer } from "./tracing.ts";

/** How often buffered spans are sent (the SDK's default is 5 s; a trace shows up sooner). */
const EXPORT_DELAY_MS = 1_000;

class OtelSpanHandle implements Span {
  constructor(readonly span: OtelSpan) {}
  setAttributes(attributes: SpanAttributes) {
    this.span.setAttributes(attributes);
  }
  rename(name: string) {
    this.span.updateName(name);
  }
  fail(message: string) {
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
  end() {
    this.span.end();
  }
}

function parentContext(parent: SpanParent): Context {
  if (parent instanceof OtelSpanHandle) return trace.setSpan(ROOT_CONTEXT, parent.span);
  if (typeof parent === "string") {
    const remote = parseTraceParent(parent);
    if (remote) return trace.setSpanContext(ROOT_CONTEXT, { ...remote, isRemote: true });
  }
  return ROOT_CONTEXT;
}

class OtelTracerHandle implements Tracer {
  readonly enabled = true;
  private readonly tracer: OtelTracer;

  constructor(
    private readonly provider: TracerProvider,
    version: string,
  ) {
    this.tracer = provider.getTracer("actuate", version);
  }

  start(name: string, parent?: SpanParent, attributes?: SpanAttributes): Span {
    const kind = parent === undefined || typeof parent === "string" ? SpanKind.SERVER : SpanKind.INTERNAL;
    return new OtelSpanHandle(this.tracer.startSpan(name, { kind, attributes }, parentContext(parent)));
  }

  shutdown() {
    return this.provider.shutdown();
  }
}

export function otlpTracer(options: { endpoint: string; serviceName: string; instance: string; version: string }) {
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      "service.name": options.serviceName,
      "service.version": options.version,
      "service.instance.id": options.instance,
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  return new OtelTracerHandle(provider, options.version);
}
