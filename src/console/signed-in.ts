import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import { type Credential, clientFor, forgetCredential, storeCredential, storedCredential } from "./session.ts";

const REFUSED = "The server no longer accepts your sign-in (it expired or was revoked). Sign in again.";
const EXPIRED = "Your sign-in expired. Sign in again.";

/**
 * Who is signed in, and the client that acts as them. A 401 from any page, or the end of a built-in
 * sign-in's token, signs the person out with a message saying why.
 */
export function useSignedIn(): {
  client: ActuateClient | null;
  signIn: (credential: Credential) => void;
  signOut: (notice: string | null) => void;
  notice: string | null;
} {
  const [credential, setCredential] = useState(storedCredential);
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((why: string | null) => {
    forgetCredential();
    setNotice(why);
    setCredential(null);
  }, []);
  const client = useMemo(
    () => (credential ? clientFor(credential.token, () => signOut(REFUSED)) : null),
    [credential, signOut],
  );
  useEffect(() => {
    if (!client || !credential) return;
    const { expiresAt } = credential;
    // setTimeout's delay is a 32-bit number of ms (~24 days); the built-in sign-in's tokens last an hour.
    const timer = expiresAt ? setTimeout(() => signOut(EXPIRED), Math.min(expiresAt - Date.now(), 2 ** 31 - 1)) : 0;
    return () => {
      clearTimeout(timer);
      client.close();
    };
  }, [client, credential, signOut]);
  const signIn = (signedIn: Credential) => {
    storeCredential(signedIn);
    setNotice(null);
    setCredential(signedIn);
  };
  return { client, signIn, signOut, notice };
}
