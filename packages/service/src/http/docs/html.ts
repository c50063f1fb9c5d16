// Small HTML helpers for the error page: escaping, the inline Markdown the project's docs use, and the page
// frame. The page is self-contained: no script, no font, nothing fetched from elsewhere.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/**
 * Inline Markdown to HTML: `code`, **bold** and [links](url). A link to an absolute http(s) URL stays a link;
 * a link to another document of the repository keeps only its text (the page is served without them).
 */
export function inlineMarkdown(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return escapeHtml(part)
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, label: string, href: string) =>
          /^https?:\/\//.test(href) ? `<a href="${href}">${label}</a>` : label,
        );
    })
    .join('');
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d232b;background:#fff}
main{max-width:1100px;margin:0 auto;padding:1rem 1.5rem 4rem}
h1{font-size:1.8rem}h2{margin-top:2.5rem;border-bottom:1px solid #d5dbe3;padding-bottom:.2rem}
section{scroll-margin-top:1rem}
code{font:13px/1.4 ui-monospace,monospace;background:#f1f4f8;padding:0 .25em;border-radius:3px}
h2 code{font-size:inherit}
.status{font-weight:700}nav ul{columns:2}:target{background:#fff8d6}
`;

/** A whole page: UTF-8, the project's style, no script. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
