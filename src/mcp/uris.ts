/** The resources an environment serves over MCP, named under its handle. */
export const schemaResourceUri = (handle: string) => `service://${handle}/schema`;
export const runResourceUri = (handle: string, runId: string) => `service://${handle}/runs/${runId}`;
