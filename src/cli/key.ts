import { newSecret, SERVICE_KEY_PREFIX } from "../auth/tokens.ts";
import { commandLine } from "./invocation.ts";

/** Prints a new service key (256 random bits) alone on stdout, and on stderr how a server is given it. */
export async function keyCreate(): Promise<number> {
  const key = newSecret(SERVICE_KEY_PREFIX);
  console.error(`a new service key: 256 random bits, stored nowhere; keep it in your secret store.
a server accepts it when it is in SERVICE_KEYS (comma-separated, so an old key can stay while clients move):
  SERVICE_KEYS=${key} ${commandLine("start")}
clients send it as a bearer token:
  curl -H "Authorization: Bearer ${key}" …`);
  console.log(key);
  return 0;
}
