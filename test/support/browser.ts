import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's Chromium (`.ci/run` installs it): playwright's own download cannot reach the internet here. */
export const CHROMIUM = "/usr/bin/chromium";
/** Where the console's browser tests write the screenshots the README links. */
export const SCREENSHOTS = join(import.meta.dir, "..", "..", "docs", "console");
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/** A fresh tab (its own sessionStorage) on the console, signed in with `credential`, collecting page errors. */
export async function consoleSignedIn(
  browser: Browser,
  url: string,
  credential: string,
  errors: string[],
  viewport: { width: number; height: number } = DESKTOP,
): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${url}/console`);
  await page.getByLabel("Token or service key").fill(credential);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
  return page;
}

/** A page's site: served from 127.0.0.1 and reached as `localhost`, another origin than an API on 127.0.0.1. */
export interface PageSite {
  /** The origin a page is opened at (give it to the API's CORS_ORIGINS). */
  origin: string;
  /** Each script as bundled, by the path the site serves it at. */
  scripts: Record<string, string>;
  stop(): void;
}

/**
 * Bundles each script for the browser (`entries`: the path it is served at → its entry file) and serves them
 * beside the pages (`pages`: path → HTML; any other path answers the page at `/`).
 */
export async function servePages(entries: Record<string, string>, pages: Record<string, string>): Promise<PageSite> {
  const bundled = await Promise.all(
    Object.entries(entries).map(async ([path, entry]) => {
      const built = await Bun.build({ entrypoints: [entry], target: "browser" });
      if (!built.success) throw new AggregateError(built.logs, `${entry} did not build`);
      return [path, await (built.outputs[0] as Blob).text()] as const;
    }),
  );
  const scripts = Object.fromEntries(bundled);
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      const { pathname } = new URL(request.url);
      const script = scripts[pathname];
      if (script !== undefined) return new Response(script, { headers: { "content-type": "text/javascript" } });
      return new Response(pages[pathname] ?? pages["/"], { headers: { "content-type": "text/html" } });
    },
  });
  return { origin: `http://localhost:${server.port}`, scripts, stop: () => server.stop(true) };
}

/** A new tab at `url`, collecting the page's errors. */
export async function openPage(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(url);
  return { page, errors };
}

const AXE = require.resolve("axe-core/axe.min.js");

/**
 * axe-core's violations of serious or critical impact on the page as it is now (missing labels and names,
 * colour contrast, landmarks, ARIA), each as `id (impact): help at <targets>`.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const found = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run()).violations;
  })) as { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
  return found
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")}`);
}
