import { describe, expect, test } from "bun:test";
import { isLoopbackHost } from "../../src/lib/loopback.ts";

// One rule for every check of "this machine" (the /mcp Host guard, the authority's redirect URIs and
// client documents, http-only settings, --insecure-no-auth): issue #41 makes `*.localhost` one of them.
describe("isLoopbackHost", () => {
  test.each([
    "localhost",
    "LOCALHOST",
    "localhost.",
    "env.localhost",
    "a.b.localhost",
    "Acme-Prod.Actuate.LocalHost",
    "env.localhost.",
    "127.0.0.1",
    "127.1.2.3",
    "127.255.255.255",
    "::1",
    "[::1]",
  ])("%s is loopback", (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  test.each([
    "localhostx",
    "evil-localhost",
    "localhost.evil.com",
    "app.localhost.evil.com",
    ".localhost",
    "a..localhost",
    "localhost..",
    "localhost:3000",
    "127.0.0.1:3000",
    "127.1",
    "127.0.0.256",
    "127.0.0.01",
    "128.0.0.1",
    "0.0.0.0",
    "::",
    "[::1]:3000",
    // IPv4-mapped: not ::1/128, as the Secure Contexts rule (and oidc-provider) has it.
    "::ffff:127.0.0.1",
    "[::ffff:7f00:1]",
    "",
  ])("%s is not", (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });

  test("a URL's hostname counts as it is written after parsing (IPv4 shorthands, upper case)", () => {
    expect(isLoopbackHost(new URL("http://127.1:3000/").hostname)).toBe(true);
    expect(isLoopbackHost(new URL("http://App.LOCALHOST:3000/").hostname)).toBe(true);
    expect(isLoopbackHost(new URL("http://[0:0:0:0:0:0:0:1]/").hostname)).toBe(true);
    expect(isLoopbackHost(new URL("http://localhost.evil.com/").hostname)).toBe(false);
  });
});
