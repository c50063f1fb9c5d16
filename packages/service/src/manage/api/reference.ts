import { readFileSync } from 'node:fs';
import type { App } from '../../http/context.js';
import { REDOC_BUNDLE_FILE, redocPage, START_SCRIPT } from '../../http/docs/redoc-page.js';
import { managementOpenapi } from './openapi.js';

// The management API's own documents, beside its endpoints: /manage/v1/openapi.json and the reference page
// /manage/v1/reference/ (Redoc, rendered in the browser from the bundle this listener serves, as the public
// reference is on the operator listener). They describe the API and hold no data: no token is asked.

const COMMON = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' };
const PAGE = {
  ...COMMON,
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};
const SCRIPT = { ...COMMON, 'content-type': 'text/javascript; charset=utf-8' };
const JSON_HEADERS = { ...COMMON, 'content-type': 'application/json; charset=utf-8' };

export function managementDocs() {
  let document: string | undefined;
  let page: string | undefined;
  let bundle: Buffer | undefined;
  const openapi = () => {
    document ??= `${JSON.stringify(managementOpenapi(), null, 2)}\n`;
    return document;
  };
  const none = { operatorScope: 'none' as const };
  return {
    register(app: App): void {
      app.get('/openapi.json', { config: none }, async (_request, reply) =>
        reply.headers(JSON_HEADERS).send(openapi()),
      );
      app.get('/reference', { config: none }, async (_request, reply) => reply.redirect('/manage/v1/reference/', 301));
      app.get('/reference/', { config: none }, async (_request, reply) => {
        page ??= redocPage('crm-export management API reference', managementOpenapi());
        return reply.headers(PAGE).send(page);
      });
      app.get('/reference/openapi.json', { config: none }, async (_request, reply) =>
        reply.headers(JSON_HEADERS).send(openapi()),
      );
      app.get('/reference/redoc.standalone.js', { config: none }, async (_request, reply) => {
        bundle ??= readFileSync(REDOC_BUNDLE_FILE);
        return reply.headers(SCRIPT).send(bundle);
      });
      app.get('/reference/reference.js', { config: none }, async (_request, reply) =>
        reply.headers(SCRIPT).send(START_SCRIPT),
      );
    },
  };
}
