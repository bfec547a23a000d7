import { describe, expect, test } from "bun:test";
import { loadSettings as load, refusalOf as refusal } from "../support/config.ts";

// Issue #41 §1, §5: SERVICE_URL switches hosting mode on; TRUST_PROXY, SERVE_ENVIRONMENTS.

describe("SERVICE_URL", () => {
  test("unset: single mode, as today", () => {
    const config = load({});
    expect(config.hosting).toBeUndefined();
    expect(config.trustProxy).toBe(false);
  });

  test("scheme, apex host (lower case, no trailing dot or slash) and port", () => {
    expect(load({ SERVICE_URL: "http://actuate.localhost:3000" }).hosting).toEqual({
      service: { scheme: "http", apex: "actuate.localhost", port: 3000 },
      serve: null,
    });
    expect(load({ SERVICE_URL: "https://Actuate.Example.COM./" }).hosting?.service).toEqual({
      scheme: "https",
      apex: "actuate.example.com",
      port: null,
    });
    // The scheme's own port is no port.
    expect(load({ SERVICE_URL: "https://actuate.example.com:443" }).hosting?.service.port).toBeNull();
  });

  test.each([
    ["ftp://actuate.example.com", "http or https"],
    ["actuate.example.com", "http or https"],
    ["https://actuate.example.com/api", "no path"],
    ["https://actuate.example.com/?x=1", "no path, query"],
    ["https://actuate.example.com#top", "no path, query or fragment"],
    ["https://user:pw@actuate.example.com", "no credentials"],
    ["http://127.0.0.1:3000", "must be a name"],
    ["http://[::1]:3000", "must be a name"],
  ])("%s is refused in one line naming SERVICE_URL", (value, why) => {
    const message = refusal({ SERVICE_URL: value });
    expect(message).toContain("SERVICE_URL");
    expect(message).toContain(why);
  });

  test("PUBLIC_URL is refused in hosting mode: each environment's URL comes from SERVICE_URL", () => {
    expect(refusal({ SERVICE_URL: "https://actuate.example.com", PUBLIC_URL: "https://x.example.com" })).toContain(
      "PUBLIC_URL: not in hosting mode",
    );
    expect(load({ PUBLIC_URL: "https://x.example.com" }).publicUrl).toBe("https://x.example.com");
  });
});

describe("TRUST_PROXY and SERVE_ENVIRONMENTS", () => {
  test("TRUST_PROXY is a boolean, false by default", () => {
    expect(load({ TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(load({ TRUST_PROXY: "false" }).trustProxy).toBe(false);
    expect(refusal({ TRUST_PROXY: "sometimes" })).toContain("TRUST_PROXY");
  });

  test("SERVE_ENVIRONMENTS: comma-separated handle globs and org: rules; unset, every environment", () => {
    const hosting = (serve: string) =>
      load({ SERVICE_URL: "https://a.example.com", SERVE_ENVIRONMENTS: serve }).hosting;
    expect(hosting("acme-*, org:acme ,shop")?.serve).toEqual(["acme-*", "org:acme", "shop"]);
    expect(hosting("!org:acme,!acme-*")?.serve).toEqual(["!org:acme", "!acme-*"]);
    expect(hosting(" , ")?.serve).toBeNull();
  });

  test.each(["Acme-*", "acme.prod", "org:", "team:acme", "a b", "!", "!!acme", "org:!acme"])(
    "the rule %p is refused",
    (rule) => {
      const message = refusal({ SERVICE_URL: "https://a.example.com", SERVE_ENVIRONMENTS: rule });
      expect(message).toContain("SERVE_ENVIRONMENTS");
    },
  );

  test("SERVE_ENVIRONMENTS means nothing in single mode and is refused there", () => {
    expect(refusal({ SERVE_ENVIRONMENTS: "acme-*" })).toContain("only with SERVICE_URL");
  });
});
