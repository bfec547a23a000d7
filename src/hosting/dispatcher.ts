import type { ServiceUrl } from "../config.ts";
import { hostTarget } from "../config.ts";
import { errorResponse } from "../http/errors.ts";
import { requestTarget } from "../http/request-target.ts";
import { isConsolePath } from "./console-site.ts";
import { requestHost } from "./host.ts";
import type { ServedCandidate } from "./serve-filter.ts";

/** An environment as the front door needs it: its id (the store's key), handle and organization's handle. */
export interface EnvironmentEntry extends ServedCandidate {
  id: number;
}

/** Where environments are found by handle (the real one is the control store). */
export interface EnvironmentDirectory {
  /** The environment of this handle; null when no environment has it. */
  byHandle(handle: string): Promise<EnvironmentEntry | null>;
  /**
   * Gives environment 1 (the database of single mode) `handle` when it has none yet, and answers it:
   * hosting mode serves it as one of its environments.
   */
  nameSingle(handle: string): Promise<EnvironmentEntry>;
}

/** Answers the requests of one site (an environment's app, the service's own). */
export type RequestHandler = (request: Request) => Response | Promise<Response>;

/** A served environment as remembered by its Host header: its app, and its routes as Bun's router matches them. */
interface Site {
  fetch: RequestHandler;
  route: ((key: string) => RequestHandler | undefined) | undefined;
}

export interface DispatcherOptions {
  service: ServiceUrl;
  /** TRUST_PROXY: X-Forwarded-Host names the host. */
  trustProxy: boolean;
  /** SERVE_ENVIRONMENTS: whether this instance serves an environment (else 421). */
  serves: (environment: ServedCandidate) => boolean;
  directory: EnvironmentDirectory;
  /** Makes an environment's runtime: called once per environment served here, on its first request. */
  open(environment: EnvironmentEntry): Promise<RequestHandler>;
  /** The service's own site (the apex), which also answers ANY_HOST on every host. */
  apex: RequestHandler;
  /** An environment's handlers by route key (native-routes.ts), given the handler `open` made; none: its app routes. */
  routesOf?: (handler: RequestHandler) => ((key: string) => RequestHandler | undefined) | undefined;
  /**
   * The console's page and chunks (console-site.ts), answered on the apex and on an environment served here
   * once its host is checked like any other path's; none: Bun's router serves them itself.
   */
  console?: RequestHandler;
}

/** Probes and scrapes reach the process whatever host they name (a load balancer asks by address). */
const ANY_HOST_PATHS = ["/healthz", "/readyz", "/metrics"];
const ANY_HOST = new Set(ANY_HOST_PATHS);
/** Host headers remembered at most (each spelling of a host is one): past it the memory starts over. */
const MAX_REMEMBERED_HOSTS = 16_384;

/** Whether a request's URL names one of ANY_HOST, read without slicing it (every served request asks). */
function isAnyHostPath(url: string): boolean {
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return false;
  for (let i = 0; i < ANY_HOST_PATHS.length; i++) {
    const path = ANY_HOST_PATHS[i] as string;
    if (url.startsWith(path, start)) {
      const next = url.charCodeAt(start + path.length);
      if (Number.isNaN(next) || next === 63 /* ? */) return true;
    }
  }
  return false;
}

/**
 * Hosting mode's front door: the request's host picks its site. `<handle>.<apex>` goes to that
 * environment's runtime (made on first use, then kept: after that a request costs a host parse and a map
 * lookup); the apex, and ANY_HOST paths on any host, go to the service; an unknown handle or a host
 * outside the apex is 404 environment_not_found; an environment this instance does not serve, 421.
 */
export class Dispatcher {
  /** Environments served here whose runtime is made, by handle. */
  private readonly served = new Map<string, RequestHandler>();
  /** Runtimes being made (or environments found not served: null), so concurrent first requests make one. */
  private readonly opening = new Map<string, Promise<RequestHandler | null | undefined>>();
  /**
   * The handlers of served environments by the Host header as sent, when no X-Forwarded-Host is read: a
   * request to a host seen before skips the host parse (its slices and lower-casing cost hosting mode's
   * hot path ~2 µs a request). Emptied whenever `served` loses or replaces an entry.
   */
  private readonly byHost = new Map<string, Site>();

  constructor(private readonly options: DispatcherOptions) {}

  /**
   * Bun.serve's handler of a route Bun's router matched (`key`, native-routes.ts): a known environment's
   * compiled handler of that route, as single mode's server calls it; anything else goes through `fetch`.
   */
  routed(key: string, path: string): RequestHandler {
    // ANY_HOST paths are one segment each: a route of more (the invoke's) never matches one of them.
    const mayBeAnyHost = path.indexOf("/", 1) === -1;
    return (request) => {
      const known = this.knownSite(request, mayBeAnyHost);
      if (known) return (known.route?.(key) ?? known.fetch)(request);
      return this.fetch(request);
    };
  }

  private knownSite(request: Request, mayBeAnyHost = true): Site | undefined {
    const sent =
      this.options.trustProxy && request.headers.has("x-forwarded-host") ? null : request.headers.get("host");
    if (sent === null) return undefined;
    const known = this.byHost.get(sent);
    // /metrics holds every environment's series: an environment's own credentials must not reach it
    // through its app once that is composed (found by the isolation test: an environment key read them).
    return known && !(mayBeAnyHost && isAnyHostPath(request.url)) ? known : undefined;
  }

  readonly fetch = (request: Request): Response | Promise<Response> => {
    const { service, trustProxy, apex, console } = this.options;
    if (console && isConsolePath(request.url)) return this.consolePage(request, console);
    const known = this.knownSite(request);
    if (known) return known.fetch(request);
    const sent = trustProxy && request.headers.has("x-forwarded-host") ? null : request.headers.get("host");
    const target = hostTarget(requestHost(request, trustProxy), service);
    if (target.kind === "environment") {
      const handler = this.served.get(target.handle);
      if (handler) {
        if (sent !== null) this.remember(sent, handler);
        if (!isAnyHostPath(request.url)) return handler(request);
      }
    }
    if (target.kind === "apex" || ANY_HOST.has(requestTarget(request).path)) return apex(request);
    if (target.kind === "outside") return notFound("this host is not an environment of this service");
    return this.first(target.handle, request);
  };

  /** The console on the apex or an environment served here (made on first use, as any request makes it). */
  private consolePage(request: Request, console: RequestHandler): Response | Promise<Response> {
    const target = hostTarget(requestHost(request, this.options.trustProxy), this.options.service);
    if (target.kind === "apex") return console(request);
    if (target.kind === "outside") return notFound("this host is not an environment of this service");
    if (this.served.has(target.handle)) return console(request);
    return this.first(target.handle, request, console);
  }

  /** Serves an environment ahead of its first request (hosting mode's environment 1, made at start-up). */
  adopt(handle: string, handler: RequestHandler): void {
    this.served.set(handle, handler);
    this.byHost.clear();
  }

  /**
   * Forgets an environment's app (it was deleted, or evicted): its next request asks the directory
   * again (404 environment_not_found once its row is gone).
   */
  forget(handle: string): void {
    this.served.delete(handle);
    this.opening.delete(handle);
    this.byHost.clear();
  }

  private remember(host: string, handler: RequestHandler): void {
    if (this.byHost.size >= MAX_REMEMBERED_HOSTS) this.byHost.clear();
    this.byHost.set(host, { fetch: handler, route: this.options.routesOf?.(handler) });
  }

  /** An environment's first request here (its runtime made); `instead` answers it once the environment is. */
  private async first(handle: string, request: Request, instead?: RequestHandler): Promise<Response> {
    let opening = this.opening.get(handle);
    if (!opening) {
      opening = this.find(handle);
      this.opening.set(handle, opening);
      // An unknown handle may be created later, and a failure tried again: neither is remembered.
      opening.then(
        (handler) => handler === undefined && this.opening.delete(handle),
        () => this.opening.delete(handle),
      );
    }
    const handler = await opening;
    if (handler === undefined) return notFound(`no environment is named ${handle}`);
    if (handler === null) {
      return errorResponse("environment_not_served", `the environment ${handle} is not served by this instance`);
    }
    return (instead ?? handler)(request);
  }

  /** The runtime of an environment served here, null for one not served here, undefined for no environment. */
  private async find(handle: string): Promise<RequestHandler | null | undefined> {
    const environment = await this.options.directory.byHandle(handle);
    if (environment === null) return undefined;
    if (!this.options.serves(environment)) return null;
    const handler = await this.options.open(environment);
    this.served.set(handle, handler);
    return handler;
  }
}

const notFound = (message: string) => errorResponse("environment_not_found", message);
