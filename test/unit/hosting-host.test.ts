import { describe, expect, test } from "bun:test";
import type { ServiceUrl } from "../../src/config.ts";
import { environmentUrl, hostTarget, serviceUrlOf } from "../../src/config.ts";
import { hostName, requestHost } from "../../src/hosting/host.ts";
import { serveFilter } from "../../src/hosting/serve-filter.ts";

const local: ServiceUrl = { scheme: "http", apex: "actuate.localhost", port: 3000 };
const hosted: ServiceUrl = { scheme: "https", apex: "actuate.example.com", port: null };

const request = (headers: Record<string, string>) => new Request("http://ignored.example/p", { headers });

describe("the host a request names", () => {
  test("Host, lower case, without port or trailing dot", () => {
    expect(hostName("Acme.Actuate.LocalHost:3000")).toBe("acme.actuate.localhost");
    expect(hostName("acme.actuate.example.com.")).toBe("acme.actuate.example.com");
    expect(hostName("[::1]:3000")).toBe("[::1]");
    expect(hostName("")).toBe("");
  });

  test("X-Forwarded-Host counts only with TRUST_PROXY, its first entry when a chain of proxies added more", () => {
    const forwarded = request({
      host: "10.0.0.5:3000",
      "x-forwarded-host": "Acme.actuate.example.com, proxy.internal",
    });
    expect(requestHost(forwarded, false)).toBe("10.0.0.5");
    expect(requestHost(forwarded, true)).toBe("acme.actuate.example.com");
    expect(requestHost(request({ host: "shop.actuate.example.com" }), true)).toBe("shop.actuate.example.com");
  });
});

describe("which site a host is", () => {
  test("the apex is the service; one handle label under it an environment", () => {
    expect(hostTarget("actuate.localhost", local)).toEqual({ kind: "apex" });
    expect(hostTarget("acme.actuate.localhost", local)).toEqual({ kind: "environment", handle: "acme" });
    expect(hostTarget("acme-prod-2.actuate.example.com", hosted)).toEqual({
      kind: "environment",
      handle: "acme-prod-2",
    });
  });

  test.each([
    "example.com",
    "actuate.example.com.evil.com",
    "evilactuate.example.com",
    "a.b.actuate.example.com",
    "-acme.actuate.example.com",
    "acme-.actuate.example.com",
    `${"a".repeat(64)}.actuate.example.com`,
    ".actuate.example.com",
    "",
  ])("%p is outside the service", (host) => {
    expect(hostTarget(host, hosted)).toEqual({ kind: "outside" });
  });

  test("an environment's URL: <scheme>://<handle>.<apex>[:port]; the service's: the apex", () => {
    expect(environmentUrl(local, "acme")).toBe("http://acme.actuate.localhost:3000");
    expect(environmentUrl(hosted, "acme")).toBe("https://acme.actuate.example.com");
    expect(serviceUrlOf(local)).toBe("http://actuate.localhost:3000");
    expect(serviceUrlOf(hosted)).toBe("https://actuate.example.com");
  });
});

describe("SERVE_ENVIRONMENTS", () => {
  const acme = { handle: "acme-prod", organization: "acme" };
  const shop = { handle: "shop", organization: null };

  test("unset: every environment", () => {
    const serves = serveFilter(null);
    expect(serves(acme) && serves(shop)).toBe(true);
  });

  test("a handle glob: * is any run of a handle's characters, the rest literal and whole", () => {
    expect(serveFilter(["acme-*"])(acme)).toBe(true);
    expect(serveFilter(["*-prod"])(acme)).toBe(true);
    expect(serveFilter(["acme"])(acme)).toBe(false);
    expect(serveFilter(["acme-*"])({ handle: "xacme-prod", organization: null })).toBe(false);
    expect(serveFilter(["shop"])(shop)).toBe(true);
  });

  test("org:<glob> matches the organization's handle, never the environment's", () => {
    expect(serveFilter(["org:acme"])(acme)).toBe(true);
    expect(serveFilter(["org:ac*"])(acme)).toBe(true);
    expect(serveFilter(["org:acme-prod"])(acme)).toBe(false);
    expect(serveFilter(["org:shop"])(shop)).toBe(false);
  });

  test("! excludes: alone, every other environment; after other rules, taken out of what they serve", () => {
    const pool = serveFilter(["!org:acme"]);
    expect(pool(acme)).toBe(false);
    expect(pool(shop)).toBe(true);
    const acmeButLab = serveFilter(["org:acme", "!acme-lab"]);
    expect(acmeButLab(acme)).toBe(true);
    expect(acmeButLab({ handle: "acme-lab", organization: "acme" })).toBe(false);
    expect(acmeButLab(shop)).toBe(false);
    expect(serveFilter(["!acme-*"])(acme)).toBe(false);
  });

  test("any rule of several serves", () => {
    const serves = serveFilter(["org:other", "shop"]);
    expect(serves(shop)).toBe(true);
    expect(serves(acme)).toBe(false);
  });
});
