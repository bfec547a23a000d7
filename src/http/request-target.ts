/** The path and query string a request was sent to. */
export interface RequestTarget {
  path: string;
  /** `?…`, or empty. */
  search: string;
}

/**
 * Where a request went, read without parsing `request.url` as a URL: Bun makes it the path alone when
 * the Host header is missing or unusable (`/p?q`), and an invalid URL for some malformed ones
 * (`http://[::1/p`), so `new URL(request.url)` threw on what a client sent. Elysia routes by the same
 * raw path.
 */
export function requestTarget(request: Request): RequestTarget {
  const url = request.url;
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  const target = start === -1 ? "/" : url.slice(start);
  const query = target.indexOf("?");
  return query === -1 ? { path: target, search: "" } : { path: target.slice(0, query), search: target.slice(query) };
}
