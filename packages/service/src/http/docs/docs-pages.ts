import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { ErrorCode } from '../../errors/catalogue.js';
import { DOCS_PATH } from '../../service-names.js';
import { errorDocUrl } from '../problem.js';
import { renderErrorsPage } from './errors-page.js';
import { linkedDocument, REDOC_BUNDLE_FILE, redocPage, START_SCRIPT } from './redoc-page.js';

// The documentation the operator listener serves next to its probes (docs/reference.md): GET /docs/ (the API
// reference, rendered by Redoc in the browser from its bundle and start script beside it), /docs/openapi.json
// (the OpenAPI document, as committed) and /docs/errors (the page problem bodies link to). GET /docs
// redirects to /docs/ so the pages' relative links resolve. The public listener serves none of it: outside
// `/v1/` its firewall answers a bare 404. Each page is rendered once per process.

const HTML = 'text/html; charset=utf-8';
const SCRIPT = 'text/javascript; charset=utf-8';
const COMMON_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' };
/** Nothing but the page's own inline style: no script, no frame, no request elsewhere. */
const PAGE_HEADERS = {
  ...COMMON_HEADERS,
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
};
/**
 * The reference: scripts from this listener only, never inline; the styles Redoc writes into the page and
 * the icons it inlines as data; nothing fetched from anywhere else (Redoc's own link to its maker's logo
 * included).
 */
const REFERENCE_HEADERS = {
  ...COMMON_HEADERS,
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

export class DocsPages {
  private openapi?: string;
  private reference?: string;
  private errors?: string;
  private bundle?: Buffer;

  /**
   * `document` is the OpenAPI document of the API; `docsUrl` where the operator published these pages (the
   * problem bodies' links), without a trailing slash. Unset, the reference links to the error page beside
   * it (`errors#<code>`, relative), which resolves wherever a reader opened the reference.
   */
  constructor(
    private readonly document: () => Record<string, unknown>,
    private readonly docsUrl: string | undefined,
  ) {}

  openapiText(): string {
    this.openapi ??= `${JSON.stringify(this.document(), null, 2)}\n`;
    return this.openapi;
  }

  referenceHtml(): string {
    const link = (code: ErrorCode) => (this.docsUrl === undefined ? `errors#${code}` : errorDocUrl(this.docsUrl, code));
    const errorsPage = this.docsUrl === undefined ? 'errors' : `${this.docsUrl}/errors`;
    this.reference ??= redocPage('crm-export API reference', linkedDocument(this.document(), link, errorsPage));
    return this.reference;
  }

  /** Redoc's browser bundle, read once from the installed package. */
  redocBundle(): Buffer {
    this.bundle ??= readFileSync(REDOC_BUNDLE_FILE);
    return this.bundle;
  }

  errorsHtml(): string {
    this.errors ??= renderErrorsPage();
    return this.errors;
  }

  /** Renders every page now, so the first reader does not wait for it. */
  warm(): void {
    this.openapiText();
    this.referenceHtml();
    this.errorsHtml();
    this.redocBundle();
  }

  /** Answers a GET or HEAD of `path` if it is one of the pages; false otherwise. */
  answer(path: string, response: ServerResponse): boolean {
    switch (path) {
      case DOCS_PATH:
        response.writeHead(301, { location: `${DOCS_PATH}/`, 'content-type': 'text/plain' }).end('moved\n');
        return true;
      case `${DOCS_PATH}/`:
        response.writeHead(200, { ...REFERENCE_HEADERS, 'content-type': HTML }).end(this.referenceHtml());
        return true;
      case `${DOCS_PATH}/redoc.standalone.js`:
        response.writeHead(200, { ...COMMON_HEADERS, 'content-type': SCRIPT }).end(this.redocBundle());
        return true;
      case `${DOCS_PATH}/reference.js`:
        response.writeHead(200, { ...COMMON_HEADERS, 'content-type': SCRIPT }).end(START_SCRIPT);
        return true;
      case `${DOCS_PATH}/errors`:
        response.writeHead(200, { ...PAGE_HEADERS, 'content-type': HTML }).end(this.errorsHtml());
        return true;
      case `${DOCS_PATH}/openapi.json`:
        response
          .writeHead(200, { 'cache-control': 'no-cache', 'content-type': 'application/json; charset=utf-8' })
          .end(this.openapiText());
        return true;
      default:
        return false;
    }
  }
}
