/** @jsxImportSource preact */
import { useState } from "preact/hooks";

type Schema = Record<string, unknown>;

/** How one input field is edited: the kinds a form can show; anything else is typed as JSON. */
export type Field =
  | {
      name: string;
      required: boolean;
      kind: "string" | "number" | "integer" | "boolean" | "json";
      description?: string;
    }
  | { name: string; required: boolean; kind: "enum"; options: string[]; description?: string };

const constsOf = (schema: Schema): string[] | null => {
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  const alternatives = schema.anyOf;
  if (Array.isArray(alternatives) && alternatives.every((a: Schema) => "const" in a))
    return alternatives.map((a: Schema) => String(a.const));
  return null;
};

/** The fields of an object input schema, in its order. */
export function fieldsOf(input: Schema): Field[] {
  const properties = (input.properties ?? {}) as Record<string, Schema>;
  const required = new Set((input.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]): Field => {
    const base = { name, required: required.has(name), description: schema.description as string | undefined };
    const options = constsOf(schema);
    if (options) return { ...base, kind: "enum", options };
    const type = schema.type;
    if (type === "string" || type === "number" || type === "integer" || type === "boolean")
      return { ...base, kind: type };
    return { ...base, kind: "json" };
  });
}

/** The input the form's text values stand for; an empty optional field is left out. */
export function inputOf(fields: Field[], values: Record<string, string | boolean>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (field.kind === "boolean") {
      if (value !== undefined || field.required) input[field.name] = value === true;
      continue;
    }
    if (value === undefined || value === "") {
      if (!field.required) continue;
      if (field.kind !== "string") continue; // the server names the missing field
      input[field.name] = "";
      continue;
    }
    const text = String(value);
    if (field.kind === "number" || field.kind === "integer") input[field.name] = Number(text);
    else if (field.kind === "json") input[field.name] = JSON.parse(text);
    else input[field.name] = text;
  }
  return input;
}

export function SchemaForm(props: {
  id: string;
  schema: Schema;
  submitLabel: string;
  busy: boolean;
  onSubmit: (input: Record<string, unknown>) => void;
}) {
  const fields = fieldsOf(props.schema);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [error, setError] = useState<string | null>(null);
  const set = (name: string, value: string | boolean) => setValues((v) => ({ ...v, [name]: value }));
  const submit = (event: Event) => {
    event.preventDefault();
    try {
      setError(null);
      props.onSubmit(inputOf(fields, values));
    } catch (e) {
      setError(`not JSON: ${(e as Error).message}`);
    }
  };
  return (
    <form onSubmit={submit} aria-label={props.submitLabel}>
      {fields.length === 0 && <p class="hint">This action takes no input.</p>}
      {fields.map((field) => {
        const id = `${props.id}-${field.name}`;
        const label = `${field.name}${field.required ? "" : " (optional)"}`;
        const hint = field.description ? <span class="hint"> {field.description}</span> : null;
        if (field.kind === "boolean")
          return (
            <div key={field.name}>
              <label for={id}>
                <input
                  id={id}
                  type="checkbox"
                  checked={values[field.name] === true}
                  onChange={(e) => set(field.name, e.currentTarget.checked)}
                />{" "}
                {label}
              </label>
              {hint}
            </div>
          );
        if (field.kind === "enum")
          return (
            <div key={field.name}>
              <label for={id}>{label}</label>
              <select
                id={id}
                value={String(values[field.name] ?? "")}
                onChange={(e) => set(field.name, e.currentTarget.value)}
              >
                <option value="">{field.required ? "choose…" : "(none)"}</option>
                {field.options.map((option) => (
                  <option key={option} value={option}>
                    {option}
                  </option>
                ))}
              </select>
              {hint}
            </div>
          );
        return (
          <div key={field.name}>
            <label for={id}>{field.kind === "json" ? `${label} (JSON)` : label}</label>
            {field.kind === "json" ? (
              <textarea
                id={id}
                rows={3}
                value={String(values[field.name] ?? "")}
                onInput={(e) => set(field.name, e.currentTarget.value)}
              />
            ) : field.kind === "string" ? (
              <input
                id={id}
                type="text"
                required={field.required}
                value={String(values[field.name] ?? "")}
                onInput={(e) => set(field.name, e.currentTarget.value)}
              />
            ) : (
              <input
                id={id}
                type="number"
                step={field.kind === "integer" ? 1 : "any"}
                required={field.required}
                value={String(values[field.name] ?? "")}
                onInput={(e) => set(field.name, e.currentTarget.value)}
              />
            )}
            {hint}
          </div>
        );
      })}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p>
        <button type="submit" disabled={props.busy}>
          {props.submitLabel}
        </button>
      </p>
    </form>
  );
}
