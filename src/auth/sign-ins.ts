import { PublicError } from "../lib/errors.ts";
import { iso } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import type { OAuthRecord } from "../store/rows.ts";
import type { Store } from "../store/store.ts";
import type { SignIn } from "../wire/views.ts";

/** The access-token claim naming the grant (the sign-in) it was issued from, so the resource side can check it still stands. */
export const GRANT_CLAIM = "grant_id";

/** How many leading characters of a sign-in's id the CLI shows, and at least how many it takes to revoke one. */
export const SIGN_IN_PREFIX_LENGTH = 12;

/** The most grants one read of their refreshes and clients carries. */
const BATCH = 500;

const signInNotFound = () => new PublicError("sign_in_not_found", "no such sign-in");

/**
 * The built-in authority's sign-ins, as people and administrators see them: listed, revoked one by one,
 * and checked by the resource side for every access token it has not seen within TOKEN_RECHECK_MS. A
 * sign-in is oidc-provider's grant: revoking it (here, by revoking its refresh token, or when a refresh
 * token is reused) removes the grant and all its codes and tokens, and the access tokens it issued are
 * refused from then on (they name it: GRANT_CLAIM).
 */
export class SignIns {
  constructor(
    private readonly $: {
      store: Store;
      now?: () => number;
      /**
       * Hosting mode: the environment's resources (its URL, URL/mcp). Its sign-ins are the grants that hold
       * one of them: an environment's keys see and end those only, not the service's (another organization's).
       */
      resources?: () => string[];
    },
  ) {}

  private now(): number {
    return (this.$.now ?? Date.now)();
  }

  /** A person's sign-ins, or everyone's; oldest first. */
  async list(user?: string): Promise<SignIn[]> {
    const grants = await this.$.store.oauth.grants(this.now(), user);
    return this.views(grants.filter((grant) => this.isHere(grant)));
  }

  /** Whether a grant is of this environment: always in single mode; in hosting mode when it holds its resource. */
  private isHere(grant: OAuthRecord): boolean {
    if (!this.$.resources) return true;
    const held = (grant.payload as { resources?: Record<string, unknown> }).resources ?? {};
    return this.$.resources().some((resource) => resource in held);
  }

  /** What `principal` may see: a user its own, a service key everyone's or one `user`'s. */
  listFor(principal: Principal, user?: string): Promise<SignIn[]> {
    if (principal.kind === "service") return this.list(user);
    if (user !== undefined && user !== principal.id) {
      throw new PublicError("access_denied", "a user sees only its own sign-ins");
    }
    return this.list(principal.id);
  }

  /** Ends the sign-in `id`: a user only its own (another's is not found), a service key anyone's. */
  async revokeFor(principal: Principal, id: string): Promise<SignIn> {
    const grant = await this.$.store.oauth.find("Grant", id, this.now());
    if (!grant || !this.isHere(grant) || (principal.kind === "user" && grant.accountId !== principal.id)) {
      throw signInNotFound();
    }
    return this.end(grant);
  }

  /** Ends the one sign-in whose id starts with `prefix` (at least SIGN_IN_PREFIX_LENGTH characters): the CLI's. */
  async revokeByPrefix(prefix: string): Promise<SignIn> {
    if (prefix.length < SIGN_IN_PREFIX_LENGTH) {
      throw new PublicError(
        "invalid_request",
        `give at least the first ${SIGN_IN_PREFIX_LENGTH} characters of the sign-in`,
      );
    }
    const grants = await this.$.store.oauth.grantsStartingWith(prefix, this.now());
    if (grants.length > 1)
      throw new PublicError("invalid_request", "more than one sign-in starts with that; give more of it");
    const [grant] = grants;
    if (!grant) throw signInNotFound();
    return this.end(grant);
  }

  /**
   * Whether the sign-in an access token of the built-in authority carries still stands: its grant is
   * there and is this person's, and the person is not disabled. A token without the claim (issued
   * before tokens carried it) names no sign-in, and is refused.
   */
  async active(user: string, claims: Record<string, unknown>): Promise<boolean> {
    const grantId = claims[GRANT_CLAIM];
    if (typeof grantId !== "string") return false;
    const [person, grant] = await Promise.all([
      this.$.store.users.get(user),
      this.$.store.oauth.find("Grant", grantId, this.now()),
    ]);
    return person?.disabledAt === null && grant?.accountId === user;
  }

  private async end(grant: OAuthRecord): Promise<SignIn> {
    const [view] = await this.views([grant]);
    await this.$.store.oauth.revokeGrant(grant.id);
    return view as SignIn;
  }

  private async views(grants: OAuthRecord[]): Promise<SignIn[]> {
    const refreshed = new Map<string, number>();
    const names = new Map<string, string | undefined>();
    // In batches: a service key's list of everyone's sign-ins may be long.
    for (let i = 0; i < grants.length; i += BATCH) {
      const part = grants.slice(i, i + BATCH);
      const clientIds = [...new Set(part.map((g) => (g.payload as { clientId: string }).clientId))];
      const [times, clients] = await Promise.all([
        this.$.store.oauth.lastRefreshes(part.map((g) => g.id)),
        this.$.store.oauth.findMany("Client", clientIds, this.now()),
      ]);
      for (const [id, at] of times) refreshed.set(id, at);
      for (const client of clients) names.set(client.id, (client.payload as { client_name?: string }).client_name);
    }
    return grants.map((grant): SignIn => {
      const { clientId, iat } = grant.payload as { clientId: string; iat: number };
      return {
        id: grant.id,
        user: grant.accountId ?? "",
        client: { id: clientId, name: names.get(clientId) ?? clientId },
        signedInAt: new Date(iat * 1000).toISOString(),
        lastRefreshAt: iso(refreshed.get(grant.id) ?? null),
        expiresAt: iso(grant.expiresAt),
      };
    });
  }
}
