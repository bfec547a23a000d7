/** What SERVE_ENVIRONMENTS is matched against: the environment's handle and its organization's. */
export interface ServedCandidate {
  handle: string;
  /** The organization's handle; null for an environment of no organization. */
  organization: string | null;
}

/**
 * SERVE_ENVIRONMENTS (config.ts has checked its rules' form): an environment is served when a handle glob
 * (`acme-*`: `*` is any run of a handle's characters) matches its handle, or an `org:<glob>` rule its
 * organization's handle. No rules (null): every environment.
 */
export function serveFilter(rules: readonly string[] | null): (candidate: ServedCandidate) => boolean {
  if (rules === null) return () => true;
  const handles = rules.filter((rule) => !rule.startsWith("org:")).map(globPattern);
  const organizations = rules.filter((rule) => rule.startsWith("org:")).map((rule) => globPattern(rule.slice(4)));
  return ({ handle, organization }) =>
    handles.some((glob) => glob.test(handle)) ||
    (organization !== null && organizations.some((glob) => glob.test(organization)));
}

// Handles hold only [a-z0-9-], so `*` is the one character with a meaning; nothing else needs escaping.
const globPattern = (glob: string) => new RegExp(`^${glob.replaceAll("*", "[a-z0-9-]*")}$`);
