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
