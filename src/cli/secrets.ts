import type { Config } from "../config.ts";
import { StartupError, secretsKeyFile } from "../startup.ts";
import type { Resealed } from "../store/variables.ts";
import { createSealer, parseKey, type Sealer, SealingError } from "../variables/sealing.ts";
import { withStore } from "./with-store.ts";

/** Secrets re-sealed per read of the database. */
const BATCH = 500;

/**
 * `secrets rotate-key`: re-seals every secret of every environment under the new key (SECRETS_KEY_NEW, else
 * stdin: never argv), opening each with SECRETS_KEY (or dev's key file) and SECRETS_KEY_PREVIOUS. A secret
 * set meanwhile is left as it was set; one no key opens stops the rotation, naming it.
 */
export async function secretsRotateKey(config: Config): Promise<number> {
  const next = await newKey();
  const old = config.secretsKey ?? { current: secretsKeyFile(config.dataDir), previous: [] };
  let sealer: Sealer;
  try {
    sealer = await createSealer(next, [old.current, ...old.previous]);
  } catch (error) {
    if (error instanceof SealingError) throw new StartupError(error.message, "SECRETS_KEY");
    throw error;
  }
  return withStore(config, async (store) => {
    let resealed = 0;
    for (;;) {
      const rows = await store.variables.sealedUnder(sealer.keyId, BATCH);
      if (rows.length === 0) break;
      const batch: Resealed[] = [];
      for (const row of rows) {
        let plaintext: string;
        try {
          plaintext = await sealer.open(row.name, row.value);
        } catch (error) {
          throw new StartupError(
            `secret ${row.name} of environment ${row.environment} does not open: ${(error as Error).message}; give its key in SECRETS_KEY or SECRETS_KEY_PREVIOUS`,
            "SECRETS_KEY",
          );
        }
        batch.push({ ...row, from: row.value, value: await sealer.seal(row.name, plaintext), keyId: sealer.keyId });
      }
      const written = await store.variables.reseal(batch);
      // None written: each was set meanwhile (under a key other than the new one); the next read says.
      if (written === 0) throw new Error("secrets keep changing under the rotation: stop the writers and run it again");
      resealed += written;
    }
    console.log(`${resealed} secret${resealed === 1 ? "" : "s"} re-sealed under key ${sealer.keyId}`);
    console.error(
      "now set SECRETS_KEY to the new key on every instance and restart them (SECRETS_KEY_PREVIOUS=<old key> lets one still on the old key's values open them meanwhile)",
    );
    return 0;
  });
}

/** The new key: SECRETS_KEY_NEW, else the first line of stdin. */
async function newKey(): Promise<string> {
  const given = process.env.SECRETS_KEY_NEW ?? (await stdinKey());
  try {
    parseKey(given, "the new key (SECRETS_KEY_NEW or stdin)");
  } catch (error) {
    throw new StartupError((error as Error).message, "SECRETS_KEY");
  }
  return given.trim();
}

async function stdinKey(): Promise<string> {
  if (process.stdin.isTTY) console.error("the new key (32 bytes, base64 or hex), then Enter and Ctrl-D:");
  return (await Bun.stdin.text()).split("\n")[0] ?? "";
}
