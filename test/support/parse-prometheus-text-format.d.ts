/** The npm parser has no types of its own: what the metrics tests read of its answer. */
declare module "parse-prometheus-text-format" {
  interface ParsedFamily {
    name: string;
    help: string;
    type: string;
    metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }[];
  }
  export default function parse(text: string): ParsedFamily[];
}
