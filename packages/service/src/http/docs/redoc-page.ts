import { createRequire } from 'node:module';
import type { ErrorCode } from '../../errors/catalogue.js';
import { errorsDescription } from '../endpoint-errors.js';
import { escapeHtml } from './html.js';

// The API reference page: Redoc renders the OpenAPI document in the reader's browser (docs/reference.md
// says why Redoc). Everything the page loads comes from the operator listener: the page itself with the
// document inlined as data, Redoc's browser bundle as its package ships it, and the script that starts it.

/** Redoc's browser bundle: one file of the installed package, served as it is. */
export const REDOC_BUNDLE_FILE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/** Redoc's options: every response open (its codes and examples), system fonts, no search (see START_SCRIPT). */
const REDOC_OPTIONS = {
  expandResponses: 'all',
  jsonSampleExpandLevel: 3,
  requiredPropsFirst: true,
  hideDownloadButtons: true,
  disableSearch: true,
  theme: { typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' } } },
};

/**
 * The script that starts Redoc on the document the page holds as data (no inline script: the page's
 * policy allows scripts from this listener only). Redoc's search runs in a worker made from a blob, which
 * that policy refuses, so search is off; the menu lists every endpoint.
 */
export const START_SCRIPT = `'use strict';
const doc = JSON.parse(document.getElementById('reference-document').textContent);
Redoc.init(doc, ${JSON.stringify(REDOC_OPTIONS)}, document.getElementById('reference'));
`;

interface Operation {
  responses?: Record<string, { description?: string; content?: Record<string, { 'x-error-codes'?: ErrorCode[] }> }>;
}

/**
 * The document as the reference shows it: each error answer's codes linked to their entry on the error
 * page, and the introduction pointing at the document itself and that page. `document` is not changed.
 */
export function linkedDocument(
  document: Record<string, unknown>,
  errorLink: (code: ErrorCode) => string,
  errorsPage: string,
): Record<string, unknown> {
  const copy = structuredClone(document) as {
    info?: { description?: string };
    paths?: Record<string, Record<string, Operation>>;
  };
  for (const item of Object.values(copy.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses ?? {})) {
        const codes = response.content?.['application/problem+json']?.['x-error-codes'];
        if (codes) response.description = errorsDescription(codes, errorLink);
      }
    }
  }
  copy.info = {
    ...copy.info,
    description: [
      copy.info?.description ?? '',
      `The OpenAPI document: [openapi.json](openapi.json). Every error answer is a problem body; each code has an entry on the [error page](${errorsPage}).`,
    ].join('\n\n'),
  };
  return copy;
}

/** The page: the document as data, Redoc's bundle and the start script, all from this listener. */
export function redocPage(title: string, document: Record<string, unknown>): string {
  // As data in a script element: `<` escaped, so no text of the document can end the element.
  const data = JSON.stringify(document).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
</head>
<body>
<noscript>The reference needs JavaScript. The document it shows is <a href="openapi.json">openapi.json</a>; the error codes are on the <a href="errors">error page</a>.</noscript>
<div id="reference"></div>
<script type="application/json" id="reference-document">${data}</script>
<script src="redoc.standalone.js"></script>
<script src="reference.js"></script>
</body>
</html>
`;
}
