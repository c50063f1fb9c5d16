import { ERROR_CATALOGUE, type ErrorCode } from '../../errors/catalogue.js';
import { ERROR_DESCRIPTIONS } from '../../errors/error-docs.js';
import { escapeHtml, inlineMarkdown, page } from './html.js';

// The error page: one section per code of the catalogue, whose element id is the code, with its status,
// title, description (from docs/errors.md) and retry advice. Problem bodies link to it (`<docs url>/errors#<code>`)
// where the operator published it and set the docs URL.

export function renderErrorsPage(): string {
  const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
  const index = codes.map((code) => `<li><a href="#${code}"><code>${code}</code></a></li>`).join('');
  const sections = codes.map((code) => {
    const entry = ERROR_CATALOGUE[code];
    const description = (ERROR_DESCRIPTIONS[code] ?? []).map((p) => `<p>${inlineMarkdown(p)}</p>`).join('');
    return [
      `<section id="${code}">`,
      `<h2><code>${code}</code></h2>`,
      `<p><span class="status">HTTP ${entry.status}</span>. ${escapeHtml(entry.title)}</p>`,
      description,
      `<p><strong>Retry:</strong> ${escapeHtml(entry.retry)}</p>`,
      '</section>',
    ].join('\n');
  });
  const body = [
    '<h1>Errors</h1>',
    '<p>Every error the API sends is a problem body (<code>application/problem+json</code>, RFC 9457) with ' +
      '<code>type</code>, <code>title</code>, <code>status</code>, <code>code</code>, <code>request_id</code>, ' +
      '<code>doc_url</code> and, when one header, query parameter or body field is at fault, <code>param</code>. ' +
      'Branch on <code>code</code>, whose section is below; where the operator published this page, ' +
      '<code>type</code> and <code>doc_url</code> link to that section, elsewhere they name the code. A code ' +
      'not listed here is handled by its HTTP status. Back to the <a href="./">API reference</a>.</p>',
    `<nav><ul>${index}</ul></nav>`,
    ...sections,
  ];
  return page('crm-export API errors', body.join('\n'));
}
