// Fallback load generator for when wrk is not installed; run as its own process so it
// does not share an event loop with anything it measures.
// usage: bun bench/load.ts '<LoadSpec as JSON>'  → prints one JSON line (LoadReport).
import { fillTemplate, type LoadReport, percentile } from "./lib.ts";

interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  bodyTemplate: string;
  durationS: number;
  connections: number;
}

async function loop(spec: LoadSpec, until: number, latencies: number[], counts: { errors: number; non2xx: number }) {
  while (performance.now() < until) {
    const started = performance.now();
    try {
      const res = await fetch(spec.url, {
        method: "POST",
        headers: spec.headers,
        body: fillTemplate(spec.bodyTemplate),
      });
      await res.arrayBuffer();
      if (res.status < 200 || res.status > 299) counts.non2xx++;
      latencies.push(performance.now() - started);
    } catch {
      counts.errors++;
    }
  }
}

async function main(spec: LoadSpec): Promise<LoadReport> {
  const latencies: number[] = [];
  const counts = { errors: 0, non2xx: 0 };
  const started = performance.now();
  const until = started + spec.durationS * 1000;
  await Promise.all(Array.from({ length: spec.connections }, () => loop(spec, until, latencies, counts)));
  const elapsedS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    ...counts,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rps: latencies.length / elapsedS,
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? "null") as LoadSpec | null;
  if (!spec) {
    console.error("usage: bun bench/load.ts '<spec json>'");
    process.exit(2);
  }
  console.log(JSON.stringify(await main(spec)));
}
