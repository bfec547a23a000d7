import type { UserRow } from "./rows.ts";

/** People who sign in with a password (the built-in authority). */
export interface UserStore {
  /** Adds the user unless the id is taken; answers whether it was added. */
  insert(row: UserRow): Promise<boolean>;
  get(id: string): Promise<UserRow | null>;
  /** Every user, oldest first, without the password hash. */
  list(): Promise<Omit<UserRow, "passwordHash">[]>;
  /** Marks the user disabled at `at` (once: a second call keeps the first time); answers whether it exists. */
  disable(id: string, at: number): Promise<boolean>;
  /** Clears the user's disabled mark; answers whether it was disabled. */
  enable(id: string): Promise<boolean>;
}
