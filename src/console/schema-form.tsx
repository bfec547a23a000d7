/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import { Alert } from "./alert.tsx";

import {
  acceptOf,
  type Draft,
  type Drafts,
  type Field,
  type FileField,
  fieldsOf,
  fileLimitsOf,
  inputOf,
  type Schema,
} from "./fields.ts";

export function SchemaForm(props: {
  id: string;
  schema: Schema;
  /** The contract's file inputs: a picker each. */
  files?: FileField[];
  submitLabel: string;
  busy: boolean;
  /** Values to start from ("run again with this input"). */
  initial?: Drafts;
  onSubmit: (input: Record<string, unknown>, files: Record<string, File>) => void;
}) {
  const fields = fieldsOf(props.schema);
  const fileFields = props.files ?? [];
  const [values, setValues] = useState<Drafts>(props.initial ?? {});
  const [files, setFiles] = useState<Record<string, File>>({});
  const choose = (field: string, file: File | undefined) =>
    setFiles(({ [field]: _, ...others }) => (file ? { ...others, [field]: file } : others));
  const [error, setError] = useState<string | null>(null);
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
      {fields.map((field) => (
        <FieldEditor
          key={field.name}
          field={field}
          id={`${props.id}-${field.name}`}
          label={field.name}
          draft={values[field.name]}
          onChange={(draft) => setValues((v) => ({ ...v, [field.name]: draft }))}
        />
      ))}
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
      <Alert message={error} />
      <p>
        <button type="submit" disabled={props.busy}>
          {props.submitLabel}
        </button>
      </p>
    </form>
  );
}

/** One field of the form: an input by its kind, a group of fields (object), or a list of items (array). */
function FieldEditor(props: {
  field: Field;
  id: string;
  label: string;
  draft: Draft | undefined;
  onChange: (draft: Draft) => void;
}) {
  const { field, id, draft, onChange } = props;
  const label = `${props.label}${field.required ? "" : " (optional)"}`;
  const hint = field.description ? <span class="hint"> {field.description}</span> : null;
  const text = typeof draft === "string" ? draft : "";
  switch (field.kind) {
    case "object": {
      const group = draft && typeof draft === "object" && !Array.isArray(draft) ? draft : {};
      return (
        <fieldset class="group">
          <legend>{label}</legend>
          {hint}
          {field.fields.map((child) => (
            <FieldEditor
              key={child.name}
              field={child}
              id={`${id}-${child.name}`}
              label={child.name}
              draft={group[child.name]}
              onChange={(value) => onChange({ ...group, [child.name]: value })}
            />
          ))}
        </fieldset>
      );
    }
    case "array": {
      const items = Array.isArray(draft) ? draft : [];
      return (
        <fieldset class="group">
          <legend>{label}</legend>
          {hint}
          {items.length === 0 && <p class="hint">No items.</p>}
          {items.map((item, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: items have no identity but their place
            <div key={i} class="item">
              <FieldEditor
                field={field.item}
                id={`${id}-${i}`}
                label={`${props.label} ${i + 1}`}
                draft={item}
                onChange={(value) => onChange(items.map((old, j) => (j === i ? value : old)))}
              />
              <button
                type="button"
                class="secondary"
                onClick={() => onChange(items.filter((_, j) => j !== i))}
              >{`Remove ${props.label} ${i + 1}`}</button>
            </div>
          ))}
          <button type="button" class="secondary" onClick={() => onChange([...items, emptyDraft(field.item)])}>
            {`Add to ${props.label}`}
          </button>
        </fieldset>
      );
    }
    case "boolean":
      return (
        <div>
          <label for={id}>
            <input
              id={id}
              type="checkbox"
              checked={draft === true}
              onChange={(e) => onChange(e.currentTarget.checked)}
            />{" "}
            {label}
          </label>
          {hint}
        </div>
      );
    case "enum":
      return (
        <div>
          <label for={id}>{label}</label>
          <select id={id} value={text} onChange={(e) => onChange(e.currentTarget.value)}>
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
    case "json":
      return (
        <div>
          <label for={id}>{`${label} (JSON)`}</label>
          <textarea id={id} rows={3} value={text} onInput={(e) => onChange(e.currentTarget.value)} />
          {hint}
        </div>
      );
    case "string":
      return (
        <div>
          <label for={id}>{label}</label>
          <input
            id={id}
            type="text"
            required={field.required}
            value={text}
            onInput={(e) => onChange(e.currentTarget.value)}
          />
          {hint}
        </div>
      );
    default:
      return (
        <div>
          <label for={id}>{label}</label>
          <input
            id={id}
            type="number"
            step={field.kind === "integer" ? 1 : "any"}
            required={field.required}
            value={text}
            onInput={(e) => onChange(e.currentTarget.value)}
          />
          {hint}
        </div>
      );
  }
}

/** A new list item: an empty group for objects, an unticked box, or empty text. */
const emptyDraft = (field: Field): Draft =>
  field.kind === "object" ? {} : field.kind === "array" ? [] : field.kind === "boolean" ? false : "";
