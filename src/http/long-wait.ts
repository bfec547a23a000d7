/**
 * Seconds a connection may sit idle before the server closes it (Bun's `idleTimeout`; Elysia's adapter
 * sets 30). Bun counts a request whose handler is still working as idle, so a wait longer than this
 * was answered with a dropped connection: the waits lift it (`holdingConnection`).
 */
export const IDLE_TIMEOUT_SECONDS = 30;

/** What of Bun's server a wait needs; Elysia's context gives it as `server` (null only when not listening). */
interface IdleTimeouts {
  timeout(request: Request, seconds: number): void;
}

/**
 * Runs a wait of up to WAIT_MS with no idle timeout on the request's connection, then puts the idle
 * timeout back before the answer goes out (Bun keeps a request's timeout on its keep-alive connection).
 * Not a finite timeout of WAIT_MS: Bun caps a request's timeout at 255 s, and WAIT_MS may be longer;
 * the wait itself ends at WAIT_MS. Lifted only once the body is read, so a slow sender is still cut off.
 */
export async function holdingConnection<T>(
  server: IdleTimeouts | null,
  request: Request,
  wait: () => Promise<T>,
): Promise<T> {
  server?.timeout(request, 0);
  try {
    return await wait();
  } finally {
    server?.timeout(request, IDLE_TIMEOUT_SECONDS);
  }
}
