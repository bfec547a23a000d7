/** What SERVE_ENVIRONMENTS is matched against: the environment's handle and its organization's. */
export interface ServedCandidate {
  handle: string;
  /** The organization's handle; null for an environment of no organization. */
  organization: string | null;
}

/**
 * SERVE_ENVIRONMENTS (config.ts has checked its rules' form): an environment is served when a handle glob
 * (`acme-*`: `*` is any run of a handle's characters) matches its handle, or an `org:<glob>` rule its
 * organization's handle, and no exclusion (the same rules after `!`: `!org:acme`) matches it. Rules that
 * are all exclusions serve every other environment (the shared pool beside an organization's own
 * instances). No rules (null): every environment.
 */
export function serveFilter(rules: readonly string[] | null): (candidate: ServedCandidate) => boolean {
  if (rules === null) return () => true;
  const included = rules.filter((rule) => !rule.startsWith("!"));
  const matchesIncluded = included.length === 0 ? () => true : anyRule(included);
  const matchesExcluded = anyRule(rules.filter((rule) => rule.startsWith("!")).map((rule) => rule.slice(1)));
  return (candidate) => matchesIncluded(candidate) && !matchesExcluded(candidate);
}

function anyRule(rules: readonly string[]): (candidate: ServedCandidate) => boolean {
  const handles = rules.filter((rule) => !rule.startsWith("org:")).map(globPattern);
  const organizations = rules.filter((rule) => rule.startsWith("org:")).map((rule) => globPattern(rule.slice(4)));
  return ({ handle, organization }) =>
    handles.some((glob) => glob.test(handle)) ||
    (organization !== null && organizations.some((glob) => glob.test(organization)));
}

// Handles hold only [a-z0-9-], so `*` is the one character with a meaning; nothing else needs escaping.
const globPattern = (glob: string) => new RegExp(`^${glob.replaceAll("*", "[a-z0-9-]*")}$`);
