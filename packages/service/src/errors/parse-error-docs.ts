// Reads each code's description from docs/errors.md: the paragraphs of its `## <code>` section between the
// `HTTP <status>. <title>` line and the `Retry:` line, each paragraph on one line. scripts/generate-error-docs.ts
// writes them to error-docs.ts, which the served error page is rendered from.

/** Each documented code's description paragraphs (inline Markdown), in the document's order. */
export function parseErrorDocs(markdown: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const sections = markdown.split(/^## /m).slice(1);
  for (const section of sections) {
    const [heading = '', ...rest] = section.split('\n');
    const code = heading.trim();
    if (!/^[a-z_]+$/.test(code)) continue;
    const lines: string[] = [];
    for (const line of rest) {
      if (line.startsWith('Retry:') || line.startsWith('#')) break;
      lines.push(line);
    }
    const paragraphs = lines
      .join('\n')
      .split(/\n\s*\n/)
      .map((p) => p.replace(/\s*\n\s*/g, ' ').trim())
      .filter((p) => p !== '' && !/^HTTP \d{3}\. /.test(p));
    out[code] = paragraphs;
  }
  return out;
}
