import { readFileSync } from "node:fs";

/** A side effect a workflow fixture recorded (test/fixtures/releases/workflows/lib/effects.ts). */
export interface Effect {
  run: string;
  step: string;
  phase?: string;
  pid: number;
}

/** The JSON lines the fixture's steps appended to `path`, one per side effect; none when it is missing. */
export function effects(path: string): Effect[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}
