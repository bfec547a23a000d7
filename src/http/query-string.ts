import type { Static, TObject } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/**
 * A route's `query:` schema: TypeBox, handed to Elysia as a Standard Schema so that values are converted
 * from text (`Value.Convert`) and every problem is an issue naming its parameter (400 `invalid_request`,
 * `details.issues[].where` = `/query/<param>`, see http/errors.ts). Elysia's own coercion of a TypeBox
 * query reports a range error (`limit=0`) at the root, without the parameter.
 */
export function queryString<T extends TObject>(schema: T) {
  return {
    "~standard": {
      version: 1 as const,
      vendor: "actuate",
      validate(query: unknown) {
        const converted = Value.Convert(schema, { ...(query as Record<string, unknown>) });
        const errors = [...Value.Errors(schema, converted)];
        if (errors.length === 0) return { value: converted as Static<T> };
        return {
          issues: errors.map((e) => ({
            path: e.path.split("/").slice(1),
            message: `${e.path.slice(1) || "query"}: ${e.message}`,
          })),
        };
      },
      types: undefined as unknown as { input: Record<string, string | undefined>; output: Static<T> },
    },
  };
}
