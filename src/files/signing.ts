import { PublicError } from "../lib/errors.ts";

export interface SignedGrant {
  /** The environment the URL was signed in: another refuses it (its files are other files). */
  e: number;
  /** The file path the URL is for. */
  p: string;
  /** The one method it allows. */
  m: "GET" | "PUT";
  /** For an upload: the content type the browser must send. */
  ct?: string;
  /** Expiry, epoch milliseconds. */
  exp: number;
}

const REFUSALS = {
  signed_url_invalid: "this signed URL is not valid",
  signed_url_expired: "this signed URL has expired",
  signed_url_used: "this signed upload URL has taken its upload; ask for another",
} as const;

export class SignedUrlRefused extends PublicError {
  override name = "SignedUrlRefused";
  constructor(code: keyof typeof REFUSALS) {
    super(code, REFUSALS[code]);
  }
}

/** A self-contained grant: base64url(JSON) + "." + HMAC-SHA256 of it under the server's secret. */
export function signGrant(grant: SignedGrant, secret: string): string {
  const payload = Buffer.from(JSON.stringify(grant)).toString("base64url");
  return `${payload}.${mac(payload, secret)}`;
}

/**
 * The grant a token carries, if the token is exactly payload "." MAC (nothing before, between or
 * after), its MAC is right, it was signed in `environment`, it allows `method`, and it has not expired.
 */
export function verifyGrant(
  token: string,
  method: string,
  secret: string,
  environment: number,
  now = Date.now(),
): SignedGrant {
  const [payload = "", signature = "", ...rest] = token.split(".");
  if (rest.length > 0) throw new SignedUrlRefused("signed_url_invalid");
  const expected = Buffer.from(mac(payload, secret));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected))
    throw new SignedUrlRefused("signed_url_invalid");
  const grant = JSON.parse(Buffer.from(payload, "base64url").toString()) as SignedGrant;
  // A URL signed before grants named their environment names none: refused (it expired within the hour).
  if (grant.e !== environment || grant.m !== method) throw new SignedUrlRefused("signed_url_invalid");
  if (grant.exp < now) throw new SignedUrlRefused("signed_url_expired");
  return grant;
}

/** What the store knows a verified token by: its hash (the token itself is a credential until used). */
export const grantHash = (token: string) => new Bun.CryptoHasher("sha256").update(token).digest("hex");

const mac = (payload: string, secret: string) =>
  new Bun.CryptoHasher("sha256", secret).update(payload).digest("base64url");
