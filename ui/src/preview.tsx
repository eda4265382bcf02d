// A choice's preview (a mock-up, code, or a few lines of markdown), drawn as text nodes only: the
// asker is a model, so nothing it writes may become HTML on the page.
import type { ComponentChildren } from "preact";

/** Markdown's block marks (a heading, a list item, a quote, a fence) or its inline ones. */
const MARKDOWN = /^(#{1,6} |[-*+] |\d+\. |> |```)|\*\*[^*\n]+\*\*|`[^`\n]+`|\[[^\]\n]+\]\([^)\s]+\)/m;

/**
 * Markdown is drawn as elements (headings, lists, quotes, code blocks, bold, italic, inline code;
 * a link as its text, never as a link); anything without its marks, such as an ASCII mock-up or a
 * snippet of code, as monospace text with its spacing kept.
 */
export function Preview({ text, label }: { text: string; label: string }) {
  return (
    <div class="preview" aria-label={`Preview: ${label}`} role="region">
      {MARKDOWN.test(text) ? <Markdown text={text} /> : <pre class="preview-code">{text}</pre>}
    </div>
  );
}

function Markdown({ text }: { text: string }) {
  const blocks: ComponentChildren[] = [];
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let at = 0; at < lines.length; ) {
    const line = lines[at];
    if (line.startsWith("```")) {
      const end = lines.findIndex((l, i) => i > at && l.startsWith("```"));
      const body = lines.slice(at + 1, end < 0 ? lines.length : end);
      blocks.push(<pre class="preview-code"><code>{body.join("\n")}</code></pre>);
      at = end < 0 ? lines.length : end + 1;
    } else if (/^#{1,6} /.test(line)) {
      blocks.push(<p class="md-heading">{inline(line.replace(/^#+ /, ""))}</p>);
      at++;
    } else if (/^([-*+]|\d+\.) /.test(line)) {
      const ordered = /^\d/.test(line);
      const items: string[] = [];
      while (at < lines.length && (ordered ? /^\d+\. / : /^[-*+] /).test(lines[at])) {
        items.push(lines[at].replace(/^([-*+]|\d+\.) /, ""));
        at++;
      }
      const list = items.map((item) => <li>{inline(item)}</li>);
      blocks.push(ordered ? <ol>{list}</ol> : <ul>{list}</ul>);
    } else if (line.startsWith("> ")) {
      const quoted: string[] = [];
      while (at < lines.length && lines[at].startsWith("> ")) quoted.push(lines[at++].slice(2));
      blocks.push(<blockquote>{inline(quoted.join("\n"))}</blockquote>);
    } else if (line.trim() === "") {
      at++;
    } else {
      const paragraph: string[] = [];
      while (at < lines.length && lines[at].trim() !== "" && !/^(#{1,6} |[-*+] |\d+\. |> |```)/.test(lines[at])) {
        paragraph.push(lines[at++]);
      }
      blocks.push(<p>{inline(paragraph.join("\n"))}</p>);
    }
  }
  return <div class="markdown">{blocks}</div>;
}

/** `code`, **bold**, *italic* / _italic_ and [text](url) (its text, the address as a tooltip). */
function inline(text: string): ComponentChildren[] {
  const marks = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\*([^*\n]+)\*|_([^_\n]+)_|\[([^\]\n]+)\]\(([^)\s]+)\)/g;
  const parts: ComponentChildren[] = [];
  let last = 0;
  for (const match of text.matchAll(marks)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const [, code, bold, italic, underscored, linkText, address] = match;
    if (code !== undefined) parts.push(<code>{code}</code>);
    else if (bold !== undefined) parts.push(<strong>{bold}</strong>);
    else if (italic !== undefined || underscored !== undefined) parts.push(<em>{italic ?? underscored}</em>);
    else parts.push(<span class="md-link" title={address}>{linkText}</span>);
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}
