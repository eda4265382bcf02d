// A small markdown renderer that builds Preact elements, never HTML: what a model or an asker writes
// (questions, a request's context, approval reasons, previews) may hold `<img onerror>` or
// `<script>`, and those must stay the characters they are written with. No innerHTML anywhere.
import type { ComponentChildren } from "preact";

/** A line that starts a block other than a paragraph. */
const BLOCK_START = /^(#{1,6} |[-*+] |\d+[.)] |> |```)/;

/** Markdown's block marks (a heading, a list item, a quote, a fence) or its inline ones. */
export const LOOKS_LIKE_MARKDOWN = /^(#{1,6} |[-*+] |\d+\. |> |```)|\*\*[^*\n]+\*\*|`[^`\n]+`|\[[^\]\n]+\]\([^)\s]+\)/m;

export interface MarkdownOptions {
  /** Links as `<a>` (http and https only, a new tab, rel=noopener); otherwise as their text. */
  links?: boolean;
  class?: string;
}

/**
 * Paragraphs, headings, bullet and numbered lists, quotes, fenced code, and inline **bold**,
 * *italic*, `code` and [links](https://…), drawn as elements; everything else as text.
 */
export function Markdown({ text, links = false, class: className }: { text: string } & MarkdownOptions) {
  return <div class={className ? `markdown ${className}` : "markdown"}>{blocks(text, links)}</div>;
}

function blocks(text: string, links: boolean): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let at = 0; at < lines.length; ) {
    const line = lines[at];
    if (line.startsWith("```")) {
      const end = lines.findIndex((l, i) => i > at && l.startsWith("```"));
      const body = lines.slice(at + 1, end < 0 ? lines.length : end);
      out.push(
        <pre class="md-code">
          <code>{body.join("\n")}</code>
        </pre>,
      );
      at = end < 0 ? lines.length : end + 1;
    } else if (/^#{1,6} /.test(line)) {
      out.push(<p class="md-heading">{inline(line.replace(/^#+ /, ""), links)}</p>);
      at++;
    } else if (/^([-*+]|\d+[.)]) /.test(line)) {
      const ordered = /^\d/.test(line);
      const item = ordered ? /^\d+[.)] / : /^[-*+] /;
      const items: string[] = [];
      while (at < lines.length && (item.test(lines[at]) || (items.length > 0 && /^ {2,}\S/.test(lines[at])))) {
        if (item.test(lines[at])) items.push(lines[at].replace(item, ""));
        else items[items.length - 1] += "\n" + lines[at].trim();
        at++;
      }
      const list = items.map((text) => <li>{inline(text, links)}</li>);
      out.push(ordered ? <ol>{list}</ol> : <ul>{list}</ul>);
    } else if (line.startsWith("> ")) {
      const quoted: string[] = [];
      while (at < lines.length && lines[at].startsWith("> ")) quoted.push(lines[at++].slice(2));
      out.push(<blockquote>{inline(quoted.join("\n"), links)}</blockquote>);
    } else if (line.trim() === "") {
      at++;
    } else {
      const paragraph: string[] = [];
      while (at < lines.length && lines[at].trim() !== "" && (paragraph.length === 0 || !BLOCK_START.test(lines[at]))) {
        paragraph.push(lines[at++]);
      }
      out.push(<p>{inline(paragraph.join("\n"), links)}</p>);
    }
  }
  return out;
}

/** `code`, **bold**, *italic* / _italic_ and [text](url). */
function inline(text: string, links: boolean): ComponentChildren[] {
  const marks = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\*([^*\s][^*\n]*)\*|\b_([^_\n]+)_\b|\[([^\]\n]+)\]\(([^)\s]+)\)/g;
  const parts: ComponentChildren[] = [];
  let last = 0;
  for (const match of text.matchAll(marks)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const [, code, bold, italic, underscored, linkText, address] = match;
    if (code !== undefined) parts.push(<code>{code}</code>);
    else if (bold !== undefined) parts.push(<strong>{inline(bold, links)}</strong>);
    else if (italic !== undefined || underscored !== undefined) parts.push(<em>{italic ?? underscored}</em>);
    else if (links && /^https?:\/\//i.test(address)) {
      parts.push(
        <a href={address} target="_blank" rel="noopener noreferrer">
          {linkText}
        </a>,
      );
    } else {
      parts.push(
        <span class="md-link" title={address}>
          {linkText}
        </span>,
      );
    }
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

/** A line of markdown as plain text, for a list row: the marks dropped, the first line only. */
export function plainLine(text: string): string {
  const first = text.split(/\r?\n/).find((line) => line.trim() !== "") ?? "";
  return first
    .replace(/^(#{1,6} |[-*+] |\d+[.)] |> )/, "")
    .replace(/\*\*([^*\n]+)\*\*/g, "$1")
    .replace(/`([^`\n]+)`/g, "$1")
    .replace(/\[([^\]\n]+)\]\([^)\s]+\)/g, "$1")
    .replace(/\*([^*\s][^*\n]*)\*/g, "$1")
    .trim();
}
