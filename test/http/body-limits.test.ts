import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, serve } from "../support/cli.ts";
import { sendChunked, sendRaw } from "../support/raw-http.ts";
import { fixture } from "../support/server.ts";

const MiB = 1024 * 1024;
const SENT_MIB = 256;
// A body held whole would add 256 MiB; reading stops at each route's limit (8 MiB at most), so the
// server takes that much and what the sockets buffer, and holds no more. Memory that one route's
// unfixed read kept resident could hide the next one's growth: what the server took shows each.
const BOUND = 64 * MiB;

const status = (pid: number) => readFileSync(`/proc/${pid}/status`, "utf8");
const kib = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(text)?.[1]) * 1024;
/** Resets the process's peak resident memory (VmHWM) to what it holds now (Linux ≥ 4.0). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5");

describe.skipIf(process.platform !== "linux")(
  "bodies over their route's limit, and requests whose URL is garbage",
  () => {
    let server: ServerProcess;
    let port: number;
    let dataDir: string;
    const key = `body-limits-${crypto.randomUUID()}`;

    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "actuate-body-limits-"));
      server = await serve(["start", "--release", fixture("basic")], {
        DATA_DIR: dataDir,
        DATABASE_URL: "",
        SERVICE_KEYS: key,
        LOG_LEVEL: "debug",
      });
      port = Number(new URL(server.url).port);
      // The authority loads on the first /oauth request: its memory is not the bodies'.
      expect((await fetch(`${server.url}/.well-known/openid-configuration`)).status).toBe(200);
    }, 30_000);

    afterAll(async () => {
      await server?.kill();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** The server's log lines at error level (a 5xx's access line included) since `from`. */
    const errorLines = (from: number) =>
      server
        .output()
        .slice(from)
        .split("\n")
        .filter((line) => line.includes('"level":"error"'));

    const routes: [method: string, path: string, credential: boolean][] = [
      ["POST", "/oauth/token", false],
      ["POST", "/oauth/register", false],
      ["POST", "/oauth/revoke", false],
      ["POST", "/oauth/interaction/no-such-sign-in/login", false],
      ["PUT", "/oauth/nowhere", false],
      ["POST", "/actions/test.echo/invoke", true],
      ["POST", "/query", true],
      ["POST", "/mcp", true],
      ["POST", "/storage/signed-upload-url", true],
    ];

    for (const [method, path, credential] of routes) {
      test(`${method} ${path}: ${SENT_MIB} MiB chunked is a JSON 413: the server reads and holds less than ${BOUND / MiB} MiB of it`, async () => {
        const pid = server.proc.pid;
        const before = kib(status(pid), "VmRSS");
        resetPeak(pid);
        const answer = await sendChunked(
          port,
          `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
            (credential ? `authorization: Bearer ${key}\r\n` : "") +
            "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n" +
            "transfer-encoding: chunked\r\n\r\n",
          SENT_MIB,
        );
        const growth = kib(status(pid), "VmHWM") - before;
        expect(answer.status).toBe(413);
        expect(answer.headers).toContain("content-type: application/json");
        expect(JSON.parse(answer.body)).toMatchObject({ ok: false, error: "payload_too_large" });
        expect(answer.sent).toBeLessThan(BOUND);
        expect(growth).toBeLessThan(BOUND);
      }, 60_000);
    }

    test("an /oauth body declared over 64 KiB is refused before any of it is read", async () => {
      const answer = await sendRaw(
        port,
        "POST /oauth/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-www-form-urlencoded\r\n" +
          `content-length: ${1024 * MiB}\r\nconnection: close\r\n\r\ngrant_type=`,
      );
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({
        ok: false,
        error: "payload_too_large",
        message: "the body is larger than 64 KiB",
        details: { limitBytes: 64 * 1024 },
      });
    }, 30_000);

    test("a Host header that makes no URL gets a JSON answer, never a 500 or a plain-text page, and no error in the log", async () => {
      const from = server.output().length;
      const targets: [method: string, target: string][] = [
        ["GET", "/oauth/interaction/no-such-sign-in"],
        ["POST", "/oauth/token"],
        ["GET", "/.well-known/openid-configuration"],
        ["GET", "/nowhere"],
        ["GET", "/mcp"],
        ["POST", "/query?format=trees"],
        ["PUT", "/storage/signed/no-such-grant"],
        ["GET", "/storage/signed/no-such-grant"],
      ];
      // Bun's request.url is then the path alone ("ex ample", none) or no URL at all ("[::1", "a:b:c").
      for (const host of ["ex ample", "", "[::1", "a:b:c"]) {
        for (const [method, target] of targets) {
          const answer = await sendRaw(
            port,
            `${method} ${target} HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${key}\r\n` +
              "origin: https://elsewhere.example\r\ncontent-type: application/x-www-form-urlencoded\r\n" +
              "content-length: 2\r\nconnection: close\r\n\r\n{}",
          );
          const what = `${method} ${target} (host ${JSON.stringify(host)}): ${answer.status} ${answer.body}`;
          expect(answer.status, what).toBeLessThan(500);
          expect(answer.headers, what).toContain("content-type: application/json");
          if (answer.status >= 400)
            expect(JSON.parse(answer.body), what).toMatchObject({ ok: false, error: expect.any(String) });
        }
      }
      expect(errorLines(from)).toEqual([]);
    }, 30_000);
  },
);
