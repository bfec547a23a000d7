/** @jsxImportSource preact */
import { useState } from "preact/hooks";

import { acceptOf, type FileField, fieldsOf, fileLimitsOf, inputOf, type Schema } from "./fields.ts";

export function SchemaForm(props: {
  id: string;
  schema: Schema;
  /** The contract's file inputs: a picker each. */
  files?: FileField[];
  submitLabel: string;
  busy: boolean;
  /** Values to start from ("run again with this input"). */
  initial?: Record<string, string | boolean>;
  onSubmit: (input: Record<string, unknown>, files: Record<string, File>) => void;
}) {
  const fields = fieldsOf(props.schema);
  const fileFields = props.files ?? [];
  const [values, setValues] = useState<Record<string, string | boolean>>(props.initial ?? {});
  const [files, setFiles] = useState<Record<string, File>>({});
  const choose = (field: string, file: File | undefined) =>
    setFiles(({ [field]: _, ...others }) => (file ? { ...others, [field]: file } : others));
  const [error, setError] = useState<string | null>(null);
  const set = (name: string, value: string | boolean) => setValues((v) => ({ ...v, [name]: value }));
  const submit = (event: Event) => {
    event.preventDefault();
    try {
      setError(null);
      props.onSubmit(inputOf(fields, values), files);
    } catch (e) {
      setError(`not JSON: ${(e as Error).message}`);
    }
  };
  return (
    <form onSubmit={submit} aria-label={props.submitLabel}>
      {fields.length === 0 && fileFields.length === 0 && <p class="hint">This action takes no input.</p>}
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
      {fileFields.map((file) => {
        const id = `${props.id}-${file.field}`;
        return (
          <div key={file.field}>
            <label for={id}>{`${file.field} (file${file.required ? "" : ", optional"})`}</label>
            <input
              id={id}
              type="file"
              accept={acceptOf(file) || undefined}
              aria-describedby={`${id}-limits`}
              onChange={(e) => choose(file.field, e.currentTarget.files?.[0])}
            />
            <span class="hint" id={`${id}-limits`}>
              {" "}
              {fileLimitsOf(file)}
            </span>
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
