// A choice's preview (a mock-up, code, or a few lines of markdown), drawn as text nodes only: the
// asker is a model, so nothing it writes may become HTML on the page.
import { LOOKS_LIKE_MARKDOWN, Markdown } from "./markdown";

/**
 * Markdown is drawn as elements (headings, lists, quotes, code blocks, bold, italic, inline code;
 * a link as its text, never as a link); anything without its marks, such as an ASCII mock-up or a
 * snippet of code, as monospace text with its spacing kept.
 */
export function Preview({ text, label }: { text: string; label: string }) {
  return (
    <div class="preview" aria-label={`Preview: ${label}`} role="region">
      {LOOKS_LIKE_MARKDOWN.test(text) ? <Markdown text={text} /> : <pre class="preview-code">{text}</pre>}
    </div>
  );
}
