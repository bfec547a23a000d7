/** Where an execution or a run is read, as every view names it (`statusUrl`): HTTP, MCP and live lists alike. */
export const executionUrl = (publicUrl: string, id: string) => `${publicUrl}/executions/${id}`;

export const runUrl = (publicUrl: string, id: string) => `${publicUrl}/runs/${id}`;
