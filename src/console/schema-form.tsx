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
  fileProblemsOf,
  inputOf,
  problemsOf,
  type Schema,
} from "./fields.ts";

type Problems = Record<string, string>;

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
  // Checked once a send was tried, then at every change: no message before anything was typed.
  const [tried, setTried] = useState(false);
  const problems: Problems = tried
    ? {
        ...problemsOf(fields, values, [props.id]),
        ...prefixed(props.id, fileProblemsOf(fileFields, files)),
      }
    : {};
  const submit = (event: Event) => {
    event.preventDefault();
    setTried(true);
    const found = {
      ...problemsOf(fields, values, [props.id]),
      ...prefixed(props.id, fileProblemsOf(fileFields, files)),
    };
    const first = Object.keys(found)[0];
    if (first) {
      setError(`${plural(Object.keys(found).length)} to correct before sending.`);
      document.getElementById(first)?.focus();
      return;
    }
    try {
      setError(null);
      props.onSubmit(inputOf(fields, values), files);
    } catch (e) {
      setError(`not JSON: ${(e as Error).message}`);
    }
  };
  return (
    // The schema's checks, not the browser's: each message beside its field, in words a screen reader reads.
    <form onSubmit={submit} aria-label={props.submitLabel} noValidate>
      {fields.length === 0 && fileFields.length === 0 && <p class="hint">This action takes no input.</p>}
      {fields.map((field) => (
        <FieldEditor
          key={field.name}
          field={field}
          id={`${props.id}-${field.name}`}
          label={field.name}
          problems={problems}
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
              aria-describedby={describedBy(id, problems, `${id}-limits`)}
              aria-invalid={problems[id] ? true : undefined}
              onChange={(e) => choose(file.field, e.currentTarget.files?.[0])}
            />
            <span class="hint" id={`${id}-limits`}>
              {" "}
              {fileLimitsOf(file)}
            </span>
            <Problem id={id} problems={problems} />
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
  problems: Problems;
  draft: Draft | undefined;
  onChange: (draft: Draft) => void;
}) {
  const { field, id, draft, onChange, problems } = props;
  const checked = {
    "aria-invalid": problems[id] ? true : undefined,
    "aria-describedby": describedBy(id, problems, field.unit ? `${id}-unit` : undefined),
  };
  const problem = <Problem id={id} problems={problems} />;
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
              problems={problems}
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
                problems={problems}
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
          <select id={id} value={text} onChange={(e) => onChange(e.currentTarget.value)} {...checked}>
            <option value="">{field.required ? "choose…" : "(none)"}</option>
            {field.options.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
          {problem}
          {hint}
        </div>
      );
    case "json":
      return (
        <div>
          <label for={id}>{`${label} (JSON)`}</label>
          <textarea id={id} rows={3} value={text} onInput={(e) => onChange(e.currentTarget.value)} {...checked} />
          {problem}
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
            {...checked}
          />
          {problem}
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
            min={field.limits?.minimum}
            max={field.limits?.maximum}
            value={text}
            onInput={(e) => onChange(e.currentTarget.value)}
            {...checked}
          />
          {field.unit && (
            <span class="unit" id={`${id}-unit`}>
              {" "}
              {field.unit}
            </span>
          )}
          {problem}
          {hint}
        </div>
      );
  }
}

/** A field's message, by it and named by its `aria-describedby`. */
function Problem(props: { id: string; problems: Problems }) {
  const message = props.problems[props.id];
  return message ? (
    <span class="field-error" id={`${props.id}-error`}>
      {message}
    </span>
  ) : null;
}

const describedBy = (id: string, problems: Problems, also?: string) =>
  [problems[id] ? `${id}-error` : undefined, also].filter(Boolean).join(" ") || undefined;

const prefixed = (formId: string, problems: Problems): Problems =>
  Object.fromEntries(Object.entries(problems).map(([field, message]) => [`${formId}-${field}`, message]));

const plural = (n: number) => (n === 1 ? "1 field" : `${n} fields`);

/** A new list item: an empty group for objects, an unticked box, or empty text. */
const emptyDraft = (field: Field): Draft =>
  field.kind === "object" ? {} : field.kind === "array" ? [] : field.kind === "boolean" ? false : "";
