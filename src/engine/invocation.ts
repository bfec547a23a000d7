import type { SentFile } from "../files/service.ts";
import { findUnsupportedCharacter, UNSUPPORTED_CHARACTERS } from "../lib/json-text.ts";
import type { SpanParent } from "../observe/tracing.ts";
import type { ValidationIssue } from "../release/contract.ts";
import type { LoadedAction } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { ExecutionRow } from "../store/rows.ts";
import type { Upload } from "../wire/views.ts";

export interface InvokeRequest {
  principal: Principal;
  action: string;
  requestId: string;
  input: unknown;
  /** File parts of a multipart invocation, by input field. */
  files?: ReadonlyMap<string, SentFile>;
  /** How long to wait for the end (default the engine's `waitMs`); 0 answers once the execution is claimed. */
  waitMs?: number;
  /** The span (or caller's traceparent) the execution's span is a child of. */
  trace?: SpanParent;
  /** A delayed invocation's: the execution whose `ctx.schedule` made it. */
  scheduledBy?: string;
}

export interface InvokeOutcome {
  execution: ExecutionRow;
  /** The files stored as the execution's uploads, by field: a multipart invocation's (absent for any other). */
  uploads?: Upload[];
  /** False when the wait ran out first: the execution goes on and is followed by its id. */
  settled: boolean;
  /** True when `requestId` had been used with this input before and nothing ran again. */
  replayed: boolean;
  /** A workflow's run (admitted; its id is the execution's). */
  runId?: string;
}

/** Engine.invoke, as the subsystems that invoke (schedules, delayed invocations) are handed it. */
export type Invoke = (request: InvokeRequest) => Promise<InvokeOutcome>;

export const NO_FILES: ReadonlyMap<string, SentFile> = new Map();
const NO_FILE_FIELDS = Object.freeze({});

/** The files sent, by field, as the input's fingerprint names them. */
export function fileFields(sent: ReadonlyMap<string, SentFile>): Record<string, unknown> {
  if (sent.size === 0) return NO_FILE_FIELDS;
  return Object.fromEntries(
    [...sent].map(([field, f]) => [field, { filename: f.filename, contentType: f.contentType, sha256: f.sha256 }]),
  );
}

/** What is wrong with an invocation's input and files; when nothing is, the checks' own empty answer. */
export function invocationIssues(
  action: LoadedAction,
  input: unknown,
  sent: ReadonlyMap<string, SentFile>,
): readonly ValidationIssue[] {
  const inInput = action.checkInput(input);
  const inFiles = action.checkFiles(sent);
  const unsupported = findUnsupportedCharacter(input, "/input");
  if (inFiles.length === 0 && unsupported === null) return inInput;
  const issues = [...inInput, ...inFiles];
  if (unsupported !== null) {
    const message = `strings and keys cannot contain ${UNSUPPORTED_CHARACTERS}`;
    issues.push({ where: unsupported, code: "unsupported_character", message });
  }
  return issues;
}
