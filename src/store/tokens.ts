import type { TokenRow } from "./rows.ts";

/** User API tokens of one environment (a token is for the environment it was made in); only their hashes are stored. */
export interface TokenStore {
  insert(row: TokenRow): Promise<void>;
  findByHash(tokenHash: string): Promise<TokenRow | null>;
  findByPrefix(prefix: string): Promise<TokenRow[]>;
  /** The tokens stored under any of these hashes (the others are unknown). */
  findByHashes(tokenHashes: string[]): Promise<TokenRow[]>;
  /** Every user token, oldest first, without its hash. */
  list(): Promise<Omit<TokenRow, "tokenHash">[]>;
  revoke(id: string, at: number): Promise<void>;
  /** Revokes every token of a user that is not revoked yet (a disabled user); answers how many. */
  revokeAllOf(userId: string, at: number): Promise<number>;
}
