/** How deep any JSON a caller sends may nest, counted from its root (an object or array is one level). */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests deeper than `limit`. Walked with an explicit stack, not recursion:
 * the point is to refuse values deep enough to overflow the stack of recursive code further on
 * (fingerprints, validators, the query compiler).
 */
export function nestsDeeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { node, depth } = next;
    if (typeof node !== "object" || node === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}

export const tooDeepMessage = `JSON may nest at most ${MAX_JSON_DEPTH} levels`;
