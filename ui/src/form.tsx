// A form's card body (`SUSPEND_KIND_FORM`: ask_user_questions, ask_user_form): one control per
// field, pre-filled with its default, and the server's refusal of each value under its field. The
// page checks nothing itself: the server is the one judge of an answer, and says what is wrong.
// A form with a `url` (an MCP server's URL-mode elicitation) has no fields: the page to open, as a
// link the person follows themselves, then *Done* or *Decline*.
import { useState } from "preact/hooks";
import {
  TextFormat,
  type Choice,
  type ChoiceField,
  type Form,
  type FormField,
  type FormFieldValue,
  type FormValues,
  type NumberField,
  type TextField,
  type Violation,
} from "../../clients/typescript/src/web/index";
import type { PendingItem } from "./feed";
import { Preview } from "./preview";
import type { Submission } from "./submit";
import { AsideActions, AsideForm, Violations, type Aside } from "./card";

/** What a field holds while the person fills it in. */
type Entry =
  | { kind: "text"; text: string }
  | { kind: "number"; text: string }
  | { kind: "boolean"; on: boolean }
  | { kind: "choice"; values: string[]; otherOn: boolean; other: string };

/** The path the server's violations give a field's value: `answer.form.values["replicas"]`. */
const valuePath = (name: string) => `answer.form.values["${name}"]`;

export function FormQuestion({ item, submission }: { item: PendingItem; submission: Submission }) {
  const form = item.call.form;
  if (form?.url) return <UrlForm item={item} form={form} submission={submission} />;
  return <FieldsForm item={item} submission={submission} />;
}

/**
 * A page to open (URL mode): the link, shown in full, that the person follows themselves (askuser
 * never fetches it). *Done* accepts (a form answer without values), *Decline* declines; the tool
 * gets no reason and no prose, so neither is asked.
 */
function UrlForm({ item, form, submission }: { item: PendingItem; form: Form; submission: Submission }) {
  const id = item.call.toolCallId;
  const target = webAddress(form.url);
  return (
    <div class="url-form">
      {form.title && form.message && <p class="form-message">{form.message}</p>}
      {target ? (
        <p class="url-target">
          A page on <strong class="url-host">{target.host}</strong>:{" "}
          <a class="url-link" href={target.href} target="_blank" rel="noopener noreferrer">
            {target.href}
          </a>
        </p>
      ) : (
        <p class="url-target">
          An address this page does not open as a link: <code class="url-text">{form.url}</code>
        </p>
      )}
      <p class="hint" id={`${id}-url-note`}>
        askuser does not open this page. Open it yourself if you trust it, do what it asks there, then choose <em>Done</em>;
        or <em>Decline</em> to tell the tool you will not.
      </p>
      <Violations list={submission.violations} id={`errors-${id}`} />
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={submission.busy}
          aria-describedby={`${id}-url-note`}
          onClick={() => void submission.submit({ form: {} })}
        >
          Done
        </button>
        <button type="button" class="danger" disabled={submission.busy} onClick={() => void submission.submit({ decline: "" })}>
          Decline
        </button>
      </div>
    </div>
  );
}

/** An http or https address as a link's target; anything else (javascript:, data:, unparsable) none. */
function webAddress(url: string): URL | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function FieldsForm({ item, submission }: { item: PendingItem; submission: Submission }) {
  const form = item.call.form;
  const fields = form?.fields ?? [];
  const [entries, setEntries] = useState<Record<string, Entry>>(() =>
    Object.fromEntries(fields.map((field) => [field.name, initialEntry(field)])),
  );
  const [aside, setAside] = useState<Aside>();
  const id = item.call.toolCallId;
  const answering = submission.violations.filter((v) => !v.field.startsWith("answer.decline") && !v.field.startsWith("answer.reply"));
  const ofField = (name: string) => answering.filter((v) => v.field === valuePath(name) || v.field.startsWith(`${valuePath(name)}.`));
  // What names no field (the whole form's size, an answer of the wrong kind) goes under the form.
  const unplaced = answering.filter((v) => !fields.some((field) => ofField(field.name).includes(v)));
  const set = (name: string, entry: Entry) => setEntries({ ...entries, [name]: entry });
  return (
    <>
      {form?.title && form.message && <p class="form-message">{form.message}</p>}
      <form
        class="form-fields"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          if (!submission.busy) void submission.submit({ form: formValues(fields, entries) });
        }}
      >
        {fields.map((field, index) => (
          <FieldControl
            key={field.name}
            field={field}
            id={`${id}-f${index}`}
            entry={entries[field.name]}
            violations={ofField(field.name)}
            onChange={(entry) => set(field.name, entry)}
          />
        ))}
        <Violations list={unplaced} id={`errors-${id}`} />
        <div class="actions">
          <button type="submit" class="primary" disabled={submission.busy}>
            Send answers
          </button>
          <AsideActions aside={aside} setAside={setAside} busy={submission.busy} />
        </div>
      </form>
      <AsideForm aside={aside} item={item} submission={submission} onBack={() => setAside(undefined)} />
    </>
  );
}

function initialEntry(field: FormField): Entry {
  const kind = field.kind;
  switch (kind.case) {
    case "text":
      return { kind: "text", text: kind.value.defaultValue ?? "" };
    case "number":
      return { kind: "number", text: kind.value.defaultValue === undefined ? "" : String(kind.value.defaultValue) };
    case "boolean":
      return { kind: "boolean", on: kind.value.defaultValue ?? false };
    default:
      return { kind: "choice", values: kind.value?.defaultValues ?? [], otherOn: false, other: "" };
  }
}

/** The answer: each field the person gave a value (a switch always has one); blank ones left out. */
function formValues(fields: FormField[], entries: Record<string, Entry>): FormValues {
  const values: FormValues = {};
  for (const field of fields) {
    const entry = entries[field.name];
    let value: FormFieldValue | undefined;
    if (entry.kind === "text") value = entry.text === "" ? undefined : entry.text;
    // A number the browser cannot read is sent as NaN, so the server names the field.
    else if (entry.kind === "number") value = entry.text.trim() === "" ? undefined : Number(entry.text);
    else if (entry.kind === "boolean") value = entry.on;
    else if (entry.otherOn) value = { values: entry.values, other: entry.other };
    else value = entry.values.length > 0 ? entry.values : undefined;
    if (value !== undefined) values[field.name] = value;
  }
  return values;
}

interface ControlProps<E extends Entry> {
  field: FormField;
  id: string;
  entry: E;
  violations: Violation[];
  onChange: (entry: E) => void;
}

function FieldControl(props: ControlProps<Entry>) {
  const { field, entry } = props;
  const kind = field.kind;
  let control;
  if (kind.case === "text" && entry.kind === "text") control = <TextControl {...(props as ControlProps<typeof entry>)} text={kind.value} />;
  else if (kind.case === "number" && entry.kind === "number") control = <NumberControl {...(props as ControlProps<typeof entry>)} number={kind.value} />;
  else if (kind.case === "boolean" && entry.kind === "boolean") control = <SwitchControl {...(props as ControlProps<typeof entry>)} />;
  else if (kind.case === "choice" && entry.kind === "choice") control = <ChoiceControl {...(props as ControlProps<typeof entry>)} choice={kind.value} />;
  else control = <p class="error">This field is of a kind this page does not know; reply instead.</p>;
  return (
    <div class="field" data-field={field.name}>
      {control}
      <Violations list={props.violations} id={`${props.id}-errors`} />
    </div>
  );
}

/** The field's question with its header chip, and whether it must be answered. */
function Question({ field }: { field: FormField }) {
  return (
    <>
      {field.header && field.header !== field.question && <span class="chip">{field.header}</span>}
      {field.question}
      {field.required ? <span class="required" aria-hidden="true"> *</span> : <span class="optional"> (optional)</span>}
    </>
  );
}

function TextControl({ field, id, entry, violations, onChange, text }: ControlProps<Extract<Entry, { kind: "text" }>> & { text: TextField }) {
  const common = {
    id,
    value: entry.text,
    required: field.required,
    "aria-invalid": violations.length > 0,
    "aria-describedby": `${id}-hint ${id}-errors`,
    onInput: (event: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => onChange({ ...entry, text: event.currentTarget.value }),
  };
  const type =
    text.format === TextFormat.EMAIL ? "email" : text.format === TextFormat.URI ? "url" : text.format === TextFormat.DATE ? "date" : "text";
  return (
    <>
      <label for={id}>
        <Question field={field} />
      </label>
      {text.multiline ? <textarea {...common} rows={4} /> : <input {...common} type={type} />}
      <Hint id={`${id}-hint`} text={textHint(text)} />
    </>
  );
}

function textHint(text: TextField): string {
  const parts: string[] = [];
  const format = {
    [TextFormat.UNSPECIFIED]: "",
    [TextFormat.EMAIL]: "an e-mail address",
    [TextFormat.URI]: "an address such as https://example.com/a",
    [TextFormat.DATE]: "a date, 2026-12-02",
    [TextFormat.DATE_TIME]: "a date and time with its offset, 2026-12-02T10:00:00Z",
  }[text.format];
  if (format) parts.push(format);
  if (text.minLength !== undefined && text.maxLength !== undefined) parts.push(`${text.minLength} to ${text.maxLength} characters`);
  else if (text.minLength !== undefined) parts.push(`at least ${text.minLength} characters`);
  else if (text.maxLength !== undefined) parts.push(`at most ${text.maxLength} characters`);
  if (text.pattern) parts.push(`matching ${text.pattern}`);
  return parts.join("; ");
}

function NumberControl({ field, id, entry, violations, onChange, number }: ControlProps<Extract<Entry, { kind: "number" }>> & { number: NumberField }) {
  const range =
    number.minimum !== undefined && number.maximum !== undefined
      ? ` from ${number.minimum} to ${number.maximum}`
      : number.minimum !== undefined
        ? ` of at least ${number.minimum}`
        : number.maximum !== undefined
          ? ` of at most ${number.maximum}`
          : "";
  return (
    <>
      <label for={id}>
        <Question field={field} />
      </label>
      <input
        id={id}
        type="number"
        inputMode={number.integer ? "numeric" : "decimal"}
        step={number.integer ? 1 : "any"}
        min={number.minimum}
        max={number.maximum}
        value={entry.text}
        required={field.required}
        aria-invalid={violations.length > 0}
        aria-describedby={`${id}-hint ${id}-errors`}
        onInput={(event) => onChange({ ...entry, text: event.currentTarget.value })}
      />
      <Hint id={`${id}-hint`} text={`${number.integer ? "a whole number" : "a number"}${range}`} />
    </>
  );
}

function SwitchControl({ field, id, entry, violations, onChange }: ControlProps<Extract<Entry, { kind: "boolean" }>>) {
  return (
    <label class="switch" for={id}>
      <input
        id={id}
        type="checkbox"
        role="switch"
        checked={entry.on}
        aria-invalid={violations.length > 0}
        aria-describedby={`${id}-errors`}
        onChange={(event) => onChange({ ...entry, on: event.currentTarget.checked })}
      />
      <span class="track" aria-hidden="true" />
      <span>
        <Question field={field} />
      </span>
    </label>
  );
}

function ChoiceControl({ field, id, entry, violations, onChange, choice }: ControlProps<Extract<Entry, { kind: "choice" }>> & { choice: ChoiceField }) {
  // A recommended choice first (the asker should put it there; the page makes sure), the rest in order.
  const choices = [...choice.choices].sort((a, b) => Number(b.recommended) - Number(a.recommended));
  const withPreview = choices.filter((c) => c.preview);
  const [pointed, setPointed] = useState<string>();
  // Beside the options: the focused or hovered one's preview, else the selected one's, else the first.
  const shown =
    choices.find((c) => c.value === pointed && c.preview) ??
    choices.find((c) => entry.values.includes(c.value) && c.preview) ??
    withPreview[0];
  const multiple = choice.multiple;
  const select = (value: string, on: boolean) =>
    onChange(
      multiple
        ? { ...entry, values: on ? [...entry.values.filter((v) => v !== value), value] : entry.values.filter((v) => v !== value) }
        : { ...entry, values: [value], otherOn: false },
    );
  const selectOther = (on: boolean, other = entry.other) =>
    onChange(multiple ? { ...entry, otherOn: on, other } : { ...entry, values: on ? [] : entry.values, otherOn: on, other });
  const name = `${id}-choice`;
  return (
    <fieldset aria-invalid={violations.length > 0} aria-describedby={`${id}-hint ${id}-errors`}>
      <legend>
        <Question field={field} />
      </legend>
      <div class={withPreview.length > 0 ? "choices with-preview" : "choices"}>
        <div class="options">
          {choices.map((option) => (
            <label
              class={`option${option.recommended ? " recommended" : ""}`}
              key={option.value}
              onMouseEnter={() => setPointed(option.value)}
              onFocusCapture={() => setPointed(option.value)}
            >
              <input
                type={multiple ? "checkbox" : "radio"}
                name={name}
                value={option.value}
                checked={entry.values.includes(option.value)}
                onChange={(event) => select(option.value, event.currentTarget.checked)}
              />
              <span>
                <span class="label">{choiceLabel(option)}</span>
                {option.recommended && <span class="chip recommended">Recommended</span>}
                {option.description && <span class="description">{option.description}</span>}
              </span>
            </label>
          ))}
          {choice.allowOther && (
            <div class="option other" onMouseEnter={() => setPointed(undefined)}>
              <label for={`${id}-other-on`}>
                <input
                  id={`${id}-other-on`}
                  type={multiple ? "checkbox" : "radio"}
                  name={name}
                  checked={entry.otherOn}
                  onChange={(event) => selectOther(event.currentTarget.checked)}
                />
                <span class="label">Other…</span>
              </label>
              <input
                type="text"
                aria-label={`Other: your own answer to ${field.question}`}
                placeholder="Your own answer"
                value={entry.other}
                onFocus={() => setPointed(undefined)}
                // Typing here is choosing "Other".
                onInput={(event) => selectOther(true, event.currentTarget.value)}
              />
            </div>
          )}
        </div>
        {shown && <Preview text={shown.preview} label={choiceLabel(shown)} />}
      </div>
      <Hint id={`${id}-hint`} text={choiceHint(choice)} />
    </fieldset>
  );
}

/** The label shown: without a "(Recommended)" its chip already says. */
function choiceLabel(choice: Choice): string {
  const label = choice.label || choice.value;
  return choice.recommended ? label.replace(/\s*\(recommended\)\s*/i, " ").trim() || label : label;
}

function choiceHint(choice: ChoiceField): string {
  if (!choice.multiple) return "";
  const { minSelected: min, maxSelected: max } = choice;
  if (min !== undefined && max !== undefined) return min === max ? `choose ${min}` : `choose ${min} to ${max}`;
  if (min !== undefined) return `choose at least ${min}`;
  if (max !== undefined) return `choose at most ${max}`;
  return "choose any";
}

function Hint({ id, text }: { id: string; text: string }) {
  return text ? (
    <p class="hint" id={id}>
      {text}
    </p>
  ) : null;
}
