// Dotted-quad 127.0.0.0/8 with decimal octets only: a leading zero reads as octal to some resolvers.
const IPV4_LOOPBACK = /^127(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
// `localhost` and every name under it (RFC 6761 §6.3), which resolvers answer with loopback.
const LOCALHOST_NAME = /^([a-z0-9_-]+\.)*localhost\.?$/i;

/**
 * Whether a host name (no port; an IPv6 address with or without its brackets) names this machine:
 * `localhost`, any `*.localhost`, `127.0.0.0/8` or `::1`. As the Secure Contexts rule has it, an
 * IPv4-mapped `::ffff:127.0.0.1` does not count.
 */
export const isLoopbackHost = (host: string): boolean =>
  host === "::1" || host === "[::1]" || IPV4_LOOPBACK.test(host) || LOCALHOST_NAME.test(host);
