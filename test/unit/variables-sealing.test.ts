import { describe, expect, test } from "bun:test";
import { compileDeclarations, missing, missingMessage, requiredNames } from "../../src/variables/declarations.ts";
import { checkVariableName, checkVariableValue } from "../../src/variables/names.ts";
import {
  createSealer,
  generateKey,
  keyIdOf,
  parseKey,
  SealingError,
  sealedKeyId,
} from "../../src/variables/sealing.ts";

const KEY = generateKey();
const OTHER = generateKey();
const SECRET = "sk_live_0123456789abcdef";

describe("sealing secrets (AES-256-GCM)", () => {
  test("a sealed value opens to its plaintext, and holds none of it", async () => {
    const sealer = await createSealer(KEY);
    const sealed = await sealer.seal("STRIPE_KEY", SECRET);
    expect(sealed).not.toContain(SECRET);
    expect(sealed).not.toContain(Buffer.from(SECRET).toString("base64url").slice(0, 12));
    expect(sealed.split(".")).toHaveLength(4);
    expect(sealedKeyId(sealed)).toBe(sealer.keyId);
    expect(await sealer.open("STRIPE_KEY", sealed)).toBe(SECRET);
    // A fresh IV each time: the same value seals differently.
    expect(await sealer.seal("STRIPE_KEY", SECRET)).not.toBe(sealed);
  });

  test("the key id is a fingerprint of the key: the same for its hex and base64 forms, another for another key", async () => {
    const raw = parseKey(KEY);
    const hex = Buffer.from(raw).toString("hex");
    expect((await createSealer(hex)).keyId).toBe((await createSealer(KEY)).keyId);
    expect(keyIdOf(raw)).toMatch(/^[0-9a-f]{12}$/);
    expect((await createSealer(OTHER)).keyId).not.toBe(keyIdOf(raw));
  });

  test("another key does not open it", async () => {
    const sealed = await (await createSealer(KEY)).seal("STRIPE_KEY", SECRET);
    const other = await createSealer(OTHER);
    expect(other.opens(sealedKeyId(sealed))).toBe(false);
    await expect(other.open("STRIPE_KEY", sealed)).rejects.toBeInstanceOf(SealingError);
    // Even when the value claims the other key's id, the authentication tag fails.
    const relabeled = sealed.replace(`.${sealedKeyId(sealed)}.`, `.${other.keyId}.`);
    await expect(other.open("STRIPE_KEY", relabeled)).rejects.toThrow(/does not open/);
  });

  test("the additional data is the name: a value moved to another name does not open", async () => {
    const sealer = await createSealer(KEY);
    const sealed = await sealer.seal("STRIPE_KEY", SECRET);
    await expect(sealer.open("OTHER_KEY", sealed)).rejects.toThrow(/sealed for another name/);
  });

  test("tampering with the ciphertext or the IV is detected", async () => {
    const sealer = await createSealer(KEY);
    const sealed = await sealer.seal("STRIPE_KEY", SECRET);
    const [v, id, iv, body] = sealed.split(".") as [string, string, string, string];
    const flip = (text: string) => {
      const bytes = Buffer.from(text, "base64url");
      bytes[0] = (bytes[0] ?? 0) ^ 1;
      return bytes.toString("base64url");
    };
    await expect(sealer.open("STRIPE_KEY", [v, id, iv, flip(body)].join("."))).rejects.toBeInstanceOf(SealingError);
    await expect(sealer.open("STRIPE_KEY", [v, id, flip(iv), body].join("."))).rejects.toBeInstanceOf(SealingError);
    await expect(sealer.open("STRIPE_KEY", "plain text")).rejects.toThrow(/not a sealed value/);
  });

  test("during a rotation the previous key still opens, and the new one seals", async () => {
    const old = await createSealer(KEY);
    const sealed = await old.seal("STRIPE_KEY", SECRET);
    const rotating = await createSealer(OTHER, [KEY]);
    expect(rotating.keyId).toBe((await createSealer(OTHER)).keyId);
    expect(rotating.opens(old.keyId)).toBe(true);
    expect(await rotating.open("STRIPE_KEY", sealed)).toBe(SECRET);
    expect(sealedKeyId(await rotating.seal("STRIPE_KEY", SECRET))).toBe(rotating.keyId);
  });

  test("a key that is not 32 bytes of base64 or hex is refused, without repeating it", () => {
    for (const bad of ["", "short", "a".repeat(63), Buffer.alloc(16).toString("base64")]) {
      expect(() => parseKey(bad)).toThrow(SealingError);
    }
    try {
      parseKey("not-a-key-but-secret-looking");
    } catch (error) {
      expect((error as Error).message).not.toContain("not-a-key-but-secret-looking");
      expect((error as Error).message).toContain("SECRETS_KEY");
    }
  });
});

describe("variable names and values", () => {
  test("names: capitals, digits, underscores, not first a digit, at most 128", () => {
    for (const good of ["A", "_X", "STRIPE_KEY", "A1", `A${"B".repeat(127)}`])
      expect(checkVariableName(good)).toBe(good);
    for (const bad of ["", "a", "1A", "A-B", "A B", `A${"B".repeat(128)}`, 3]) {
      expect(() => checkVariableName(bad)).toThrow(expect.objectContaining({ code: "invalid_variable" }));
    }
  });

  test("values: strings of at most 64 KiB; a secret of at least 8 characters; the message holds no value", () => {
    expect(checkVariableValue("A", "", false)).toBe("");
    expect(checkVariableValue("A", "x".repeat(64 * 1024), false)).toHaveLength(64 * 1024);
    expect(() => checkVariableValue("A", "x".repeat(64 * 1024 + 1), false)).toThrow(/64 KiB/);
    expect(() => checkVariableValue("A", "é".repeat(40_000), false)).toThrow(/64 KiB/);
    expect(() => checkVariableValue("A", 1, false)).toThrow(/string/);
    try {
      checkVariableValue("PIN", "1234567", true);
      throw new Error("accepted");
    } catch (error) {
      expect((error as { code?: string }).code).toBe("invalid_variable");
      expect((error as Error).message).toContain("8 characters");
      expect((error as Error).message).not.toContain("1234567");
    }
    expect(checkVariableValue("PIN", "12345678", true)).toBe("12345678");
  });
});

describe("a release's declarations", () => {
  test("required are those without a default; missing are the required not set", () => {
    const compiled = compileDeclarations({ STRIPE_KEY: { secret: true }, REGION: { default: "eu" }, API_URL: {} });
    if (!("declarations" in compiled)) throw new Error(compiled.problems.join());
    expect(compiled.declarations).toEqual({
      STRIPE_KEY: { secret: true },
      REGION: { secret: false, default: "eu" },
      API_URL: { secret: false },
    });
    expect(requiredNames(compiled.declarations)).toEqual(["API_URL", "STRIPE_KEY"]);
    expect(missing(compiled.declarations, ["API_URL", "OTHER"])).toEqual(["STRIPE_KEY"]);
    const message = missingMessage("v2", ["STRIPE_KEY"], compiled.declarations, "acme-prod");
    expect(message).toContain("actuate vars set acme-prod STRIPE_KEY --secret");
    expect(missingMessage("v2", ["API_URL"], compiled.declarations, null)).toContain(
      "actuate vars set API_URL\n".trim(),
    );
  });

  test("bad declarations are refused, each named", () => {
    const compiled = compileDeclarations({
      lower: {},
      SECRET_WITH_DEFAULT: { secret: true, default: "x" },
      NUMBER_DEFAULT: { default: 3 },
      ODD: { secret: "yes", extra: 1 },
    });
    expect("problems" in compiled && compiled.problems.join("\n")).toEqual(
      [
        "env.lower: a variable name is capital letters, digits and _ (not first a digit), at most 128",
        "env.SECRET_WITH_DEFAULT: a secret has no default (it would be in the bundle in plain text)",
        "env.NUMBER_DEFAULT.default must be a string",
        "env.ODD: unknown extra (secret, default, description)",
        "env.ODD.secret must be true or false",
      ].join("\n"),
    );
    expect(compileDeclarations([])).toEqual({ problems: [expect.stringContaining("env must be an object")] });
  });
});
