import { type ActuateClient, createClient } from "../client/index.ts";

// sessionStorage: the credential lasts as long as the tab, and never goes into a URL.
const KEY = "actuate.console.credential";

export const storedCredential = () => sessionStorage.getItem(KEY);
export const storeCredential = (credential: string) => sessionStorage.setItem(KEY, credential);
export const forgetCredential = () => sessionStorage.removeItem(KEY);

/** A client of the server that serves the console, as whoever signed in. */
export const clientFor = (credential: string): ActuateClient =>
  createClient({ url: location.origin, token: credential });
