import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { requestKeysPath } from "../../src/store/sqlite/request-keys/file.ts";
import { cli, type Launch, repoRoot, serve } from "../support/cli.ts";
import { checkpointedExecutionIds, dialects, selectRows, type TestDatabase } from "../support/databases.ts";
import { freePort } from "../support/hosting.ts";
import { fixture, type TestResponse } from "../support/server.ts";

// `bun run build` bundles ~950 modules and writes a ~115 MB executable: seconds, more on a loaded machine.
const BUILD_TIMEOUT_MS = 180_000;
const RUN_TIMEOUT_MS = 60_000;

let folder: string;
let binary: Launch;

/** Builds the binary and copies it, with a release folder, where neither the repository nor a node_modules is. */
beforeAll(async () => {
  const build = Bun.spawn(["bun", "run", "build"], { cwd: repoRoot, stdout: "ignore", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(build.stderr).text(), build.exited]);
  if (code !== 0) throw new Error(`bun run build failed:\n${stderr}`);
  folder = mkdtempSync(join(tmpdir(), "actuate-binary-"));
  for (let dir = folder; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "node_modules")))
      throw new Error(`${dir}/node_modules would be reachable from the binary`);
  }
  copyFileSync(join(repoRoot, "dist", "actuate"), join(folder, "actuate"));
  cpSync(fixture("basic"), join(folder, "app"), { recursive: true });
  // The binary must ignore a bunfig.toml where it runs (the repository has one); this one's preload would fail.
  writeFileSync(join(folder, "bunfig.toml"), 'preload = ["./not-there.ts"]\n');
  binary = { command: [join(folder, "actuate")], cwd: folder };
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

const invoke = (url: string, credential: string | null, action: string, input: unknown): Promise<TestResponse> =>
  fetch(`${url}/actions/${action}/invoke`, {
    method: "POST",
    headers: credential ? { authorization: `Bearer ${credential}` } : {},
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });

describe("the compiled binary's CLI", () => {
  test(
    "names itself actuate in usage, help, examples and messages, never bun run",
    async () => {
      const env = { DATA_DIR: join(folder, "data-naming"), DATABASE_URL: "" };
      const outputs: string[] = [];
      const run = async (args: string[]) => {
        const result = await cli(args, env, binary);
        outputs.push(result.stdout + result.stderr);
        return result;
      };

      const help = await run(["start", "--help"]);
      expect(help.stdout).toStartWith("usage: actuate start");
      expect(help.stdout).toContain("examples:\n  KEY=$(actuate key create) && ");
      expect(help.stdout).toMatch(/SERVICE_KEYS .*make one with actuate key create/);
      const overview = await run([]);
      expect(overview.stderr).toContain("\n  actuate release publish ");
      expect(overview.stderr).toContain("actuate <command> --help shows");
      const flag = await run(["release", "list", "--bogus"]);
      expect(flag.stderr).toBe(
        "error: actuate release list has no flag --bogus\nusage: actuate release list [--url <url>]\n",
      );
      expect((await run(["token", "mint"])).stderr).toContain('actuate token has no command "mint"');
      expect((await run(["key", "create"])).stderr).toMatch(/SERVICE_KEYS=\S+ actuate start\n/);
      expect((await run(["user", "list"])).stdout).toContain("add one with actuate user add <id>");

      const server = await serve(["start"], env, binary);
      await server.waitFor(/no release is active: publish one with actuate release publish <dir>/, 15_000, 0);
      await server.kill();
      outputs.push(server.output());
      expect(outputs.filter((output) => output.includes("bun run"))).toEqual([]);
    },
    RUN_TIMEOUT_MS,
  );
});

describe("the compiled binary in hosting mode", () => {
  // Hosting mode's parts are imported on first use (runtime/hosting.ts): a lazily imported module once failed
  // to load from the binary's bundle only, so the binary itself serves the apex, its authority and an environment.
  test(
    "serves the apex's control API and authority metadata, and an environment by its host",
    async () => {
      const port = freePort();
      const key = `binary-hosting-${crypto.randomUUID()}`;
      const env = {
        DATA_DIR: join(folder, "data-hosting"),
        DATABASE_URL: "",
        SERVICE_KEYS: key,
        PORT: String(port),
        SERVICE_URL: `http://actuate.localhost:${port}`,
        HANDLE: "main",
      };
      const server = await serve(["start", "--release", join(folder, "app")], env, binary);
      try {
        const apex = `http://actuate.localhost:${port}`;
        const listed: TestResponse = await fetch(`${apex}/environments`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(listed.status).toBe(200);
        expect((await listed.json()).items.map((e: { handle: string }) => e.handle)).toEqual(["main"]);
        const metadata: TestResponse = await fetch(`${apex}/.well-known/oauth-authorization-server`);
        expect((await metadata.json()).issuer).toBe(apex);
        const answer = await invoke(`http://main.actuate.localhost:${port}`, key, "test.echo", {
          text: "hosted",
          n: 1,
        });
        expect(answer.status).toBe(200);
        expect((await answer.json()).execution.output).toEqual({ text: "hosted", n: 1 });
      } finally {
        await server.kill();
      }
    },
    RUN_TIMEOUT_MS,
  );
});

/** What deploy/Dockerfile says of the image it runs the server in. */
interface Image {
  uid: number;
  gid: number;
  dataDir: string;
  /** Who the image makes own DATA_DIR; null when the image has no such folder. */
  dataDirOwner: { uid: number; gid: number } | null;
}

async function readImage(): Promise<Image> {
  // One instruction a line: continuation lines joined.
  const dockerfile = (await Bun.file(join(repoRoot, "deploy", "Dockerfile")).text()).replace(/\\\n\s*/g, " ");
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const number = (pattern: RegExp) => Number(pattern.exec(runtime)?.[1] ?? Number.NaN);
  const dataDir = /^ENV .*\bDATA_DIR=(\S+)/m.exec(runtime)?.[1] ?? "";
  const dir = dataDir.replaceAll(".", "\\.");
  // `install -d -o <uid> -g <gid> [-m <mode>] <dir>`, or `mkdir -p <dir> && chown <uid>:<gid> <dir>`.
  const owner =
    new RegExp(`^RUN .*\\binstall -d -o (\\d+) -g (\\d+)(?: -m \\d+)? ${dir}(?:\\s|$)`, "m").exec(runtime) ??
    new RegExp(`^RUN .*\\bmkdir -p ${dir} && chown (\\d+):(\\d+) ${dir}(?:\\s|$)`, "m").exec(runtime);
  return {
    uid: number(/^RUN .*\buseradd .*--uid (\d+)/m),
    gid: number(/^RUN .*\bgroupadd .*--gid (\d+)/m),
    dataDir,
    dataDirOwner: owner ? { uid: Number(owner[1]), gid: Number(owner[2]) } : null,
  };
}

// Only root can start a process as another user; CI runs the tests as root.
const isRoot = process.getuid?.() === 0;
if (!isRoot) console.log("skipped: the image's layout as uid 10001 (setpriv needs root; CI runs as root)");

describe("the image (deploy/Dockerfile, deploy/compose.yaml)", () => {
  test("runs the server as a fixed non-root uid and gid, and creates its DATA_DIR owned by them, where compose mounts a volume", async () => {
    const image = await readImage();
    expect(image.uid).toBe(10001);
    expect(image.gid).toBe(10001);
    expect(image.dataDir).toBe("/app/data");
    // A named volume mounted on a folder the image has starts as a copy of it, owner included; on one it
    // has not, Docker creates the folder owned by root, and the server (EACCES at start) cannot write it.
    expect(image.dataDirOwner).toEqual({ uid: image.uid, gid: image.gid });
    const compose = await Bun.file(join(repoRoot, "deploy", "compose.yaml")).text();
    expect(compose).toMatch(new RegExp(`^\\s+- actuate-data:${image.dataDir}$`, "m"));
  });

  for (const dialect of dialects) {
    test.skipIf(!isRoot)(
      `the binary runs as that user in the image's layout; in a root-owned DATA_DIR it says so in one line (${dialect.name})`,
      async () => {
        const image = await readImage();
        const database = await dialect.create();
        // A root-owned copy of the image's file system: the binary in /usr/local/bin, the folders above DATA_DIR.
        const root = mkdtempSync(join(tmpdir(), "actuate-image-"));
        try {
          chmodSync(root, 0o755);
          const bin = join(root, "usr", "local", "bin", "actuate");
          mkdirSync(dirname(bin), { recursive: true, mode: 0o755 });
          copyFileSync(join(folder, "actuate"), bin);
          chmodSync(bin, 0o755);
          const dataDir = join(root, image.dataDir);
          mkdirSync(dirname(dataDir), { recursive: true, mode: 0o755 });
          const asServer: Launch = {
            command: ["setpriv", "--reuid", String(image.uid), "--regid", String(image.gid), "--clear-groups", bin],
            cwd: dirname(dataDir),
          };
          // PostgreSQL as compose.yaml runs it, or SQLite in DATA_DIR (the image's default).
          const env = { DATA_DIR: dataDir, DATABASE_URL: dialect.name === "postgres" ? database.url : "" };

          // The volume's folder as Docker makes it when the image has none: root's.
          mkdirSync(dataDir, { mode: 0o755 });
          const refused = await cli(["start"], env, asServer);
          expect(refused.code).toBe(1);
          expect(refused.stderr).toMatch(
            new RegExp(
              `^error: DATA_DIR ${dataDir} cannot be written by this process \\(uid ${image.uid}\\): .+; make it writable by that user, or set DATA_DIR\\n$`,
            ),
          );

          // The folder as the image makes it (and a new volume copies it).
          rmSync(dataDir, { recursive: true });
          mkdirSync(dataDir, { mode: 0o755 });
          if (image.dataDirOwner) chownSync(dataDir, image.dataDirOwner.uid, image.dataDirOwner.gid);
          const server = await serve(["start"], env, asServer);
          try {
            const health = await fetch(`${server.url}/healthz`);
            expect(health.status).toBe(200);
            expect(existsSync(join(dataDir, "spool"))).toBe(true);
          } finally {
            await server.kill();
          }
        } finally {
          rmSync(root, { recursive: true, force: true });
          await database.drop();
        }
      },
      RUN_TIMEOUT_MS,
    );
  }
});

for (const dialect of dialects) {
  describe(`compiled binary (${dialect.name})`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await dialect.create();
    });
    afterAll(async () => {
      await database.drop();
    });

    test(
      "publishes a release, makes a token and serves the release, from a folder without the repository",
      async () => {
        const serviceKey = `binary-key-${crypto.randomUUID()}`;
        const env = {
          DATA_DIR: join(folder, `data-${dialect.name}`),
          DATABASE_URL: database.url,
          SERVICE_KEYS: serviceKey,
        };

        const published = await cli(["release", "publish", "app"], env, binary);
        expect(published.stderr).toBe("");
        expect(published.stdout).toContain("release t1 published");
        expect(published.stdout).toMatch(/added\s+test\.echo\s+[0-9a-f]{16}/);
        const created = await cli(["token", "create", "--user", "erin"], env, binary);
        expect(created.code).toBe(0);
        const token = created.stdout.trim().split("\n").at(-1) ?? "";

        const server = await serve(["start"], env, binary);
        try {
          const health = await fetch(`${server.url}/healthz`);
          expect(health.status).toBe(200);
          expect(await health.json()).toEqual({ ok: true });

          const echoed = await invoke(server.url, serviceKey, "test.echo", { text: "from the binary", n: 3 });
          expect(echoed.status).toBe(200);
          const echoedBody = await echoed.json();
          expect(echoedBody.execution).toMatchObject({
            status: "succeeded",
            output: { text: "from the binary", n: 3 },
            principal: { kind: "service" },
          });
          const asUser = await (await invoke(server.url, token, "test.version", {})).json();
          expect(asUser.execution).toMatchObject({
            output: { release: "t1" },
            principal: { kind: "user", id: "erin" },
          });
          expect((await invoke(server.url, null, "test.echo", { text: "x" })).status).toBe(401);

          if (dialect.name === "sqlite") {
            // The request-key writer is a thread started from its own entrypoint of the binary: the keys
            // reach its file within a second or so (a thread that cannot start would leave it empty).
            const echoedId = echoedBody.execution.id;
            const keys = `sqlite:${requestKeysPath(database.url.replace(/^sqlite:/, ""))}`;
            const merged = async () =>
              (await selectRows(keys, "select execution_id as id from request_keys")).map((r) => r.id);
            for (let i = 0; i < 300 && !(await merged()).includes(echoedId); i++) await Bun.sleep(50);
            expect(await merged()).toContain(echoedId);
            // So is the checkpoint thread: a copy of the database file alone (its WAL left behind) holds the
            // execution once the thread has checkpointed, the server's own connection waiting for thousands of pages.
            const file = database.url.replace(/^sqlite:/, "");
            for (let i = 0; i < 300 && !(await checkpointedExecutionIds(file)).has(echoedId); i++) await Bun.sleep(50);
            expect(await checkpointedExecutionIds(file)).toContain(echoedId);
          }

          // The MCP SDK is a chunk of the binary loaded on the first /mcp request (not at start).
          const listed: TestResponse = await fetch(`${server.url}/mcp`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${serviceKey}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": "2025-11-25",
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
          });
          expect(listed.status).toBe(200);
          const tools = ((await listed.json()).result.tools as { name: string }[]).map((tool) => tool.name);
          expect(tools).toContain("test.echo");

          // So is the multipart parser, on the first multipart invoke.
          const form = new FormData();
          form.set("request", JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "n" } }));
          form.set("picture", new File(["png bytes"], "p.png", { type: "image/png" }));
          const attached: TestResponse = await fetch(`${server.url}/actions/test.attach/invoke`, {
            method: "POST",
            headers: { authorization: `Bearer ${serviceKey}` },
            body: form,
          });
          expect(attached.status).toBe(200);
          expect((await attached.json()).execution.output).toEqual({
            size: 9,
            text: "png bytes",
            filename: "p.png",
            hasExtra: false,
          });

          // The console was bundled into the binary: its page, and the hashed chunks it names, from memory.
          const root = await fetch(`${server.url}/`, { redirect: "manual" });
          expect([root.status, root.headers.get("location")]).toEqual([302, "/console"]);
          const page = await fetch(`${server.url}/console`);
          expect(page.headers.get("content-type")).toStartWith("text/html");
          const html = await page.text();
          const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1] as string);
          expect(assets.some((a) => a.endsWith(".js")) && assets.some((a) => a.endsWith(".css"))).toBe(true);
          let script = "";
          for (const asset of assets) {
            const answer = await fetch(`${server.url}${asset}`);
            expect([asset, answer.status]).toEqual([asset, 200]);
            expect(answer.headers.get("etag")).toBeTruthy();
            if (asset.endsWith(".js")) script += await answer.text();
          }
          expect(script).toContain("Sign in to the Actuate console");
        } finally {
          await server.kill();
        }
      },
      RUN_TIMEOUT_MS,
    );
  });
}
