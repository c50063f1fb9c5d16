import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveDocsUrl, resolveOps, serverSettings } from '../../src/cli/options.js';
import { ManualClock } from '../../src/clock.js';
import { ApiError, ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors/catalogue.js';
import { ERROR_DESCRIPTIONS } from '../../src/errors/error-docs.js';
import { parseErrorDocs } from '../../src/errors/parse-error-docs.js';
import { buildApp } from '../../src/http/app.js';
import { DocsPages } from '../../src/http/docs/docs-pages.js';
import { inlineMarkdown } from '../../src/http/docs/html.js';
import { REDOC_BUNDLE_FILE, START_SCRIPT } from '../../src/http/docs/redoc-page.js';
import { errorDocUrl, ProblemBodies } from '../../src/http/problem.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { startOperatorListener } from '../../src/operator-listener.js';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { expectProblem } from './expect-problem.js';
import { KEY_A } from './fixtures.js';
import { auth, fakeAccess, type Harness, harness } from './harness.js';

// The API reference on the operator listener (docs/reference.md): the pages, their headers, the public
// listener's bare 404 for them, and where the problem bodies' links point.

const ROOT = new URL('../../../../', import.meta.url);
const read = (path: string) => readFileSync(fileURLToPath(new URL(path, ROOT)), 'utf8');
const OPENAPI_TEXT = read('openapi.json');
const OPENAPI = JSON.parse(OPENAPI_TEXT) as {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> };
};
const silent = pino({ level: 'silent' });

type Operations = Record<
  string,
  Record<string, { operationId: string; responses: Record<string, { description: string }> }>
>;

/** The OpenAPI document the reference page holds as data for Redoc. */
function pageDocument(html: string): { info: { description: string }; paths: Operations } {
  const data = /<script type="application\/json" id="reference-document">([^<]*)<\/script>/.exec(html)?.[1];
  return JSON.parse(data ?? 'null');
}

async function listening(options: Partial<ServerOptions>): Promise<RunningServer> {
  const store = new SqliteStore({ path: ':memory:' });
  await store.migrate();
  return startServer({
    store,
    host: '127.0.0.1',
    port: 0,
    logger: silent,
    handleSignals: false,
    feedJobs: false,
    ...options,
  });
}

describe('the API reference the operator listener serves under /docs', () => {
  let server: RunningServer;
  let ops: string;
  beforeAll(async () => {
    server = await listening({ ops: { host: '127.0.0.1', port: 0 } });
    ops = server.opsOrigin as string;
  }, 30_000);
  afterAll(() => server?.close());

  const get = (url: string, init?: RequestInit) => fetch(`${ops}${url}`, { redirect: 'manual', ...init });

  it('/docs/openapi.json is the committed openapi.json, byte for byte', async () => {
    const res = await get('/docs/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe(OPENAPI_TEXT);
  });

  it('/docs redirects to /docs/, whose page holds the document for Redoc and only scripts of this listener', async () => {
    const redirect = await get('/docs');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/docs/');
    const res = await get('/docs/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = res.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self';");
    const body = await res.text();
    // Scripts by address (this listener's), and the document as data: nothing inline runs.
    const scripts = body.match(/<script[^>]*>/g) ?? [];
    expect(scripts).toEqual([
      '<script type="application/json" id="reference-document">',
      '<script src="redoc.standalone.js">',
      '<script src="reference.js">',
    ]);
    const document = pageDocument(body);
    for (const [path, item] of Object.entries(OPENAPI.paths)) {
      for (const method of Object.keys(item)) expect(document.paths[path]?.[method]?.operationId).toBeDefined();
    }
    // Each error code linked to the error page beside it (relative to /docs/, so they resolve on whatever
    // address the reader used), and the introduction names the document and that page.
    expect(document.paths['/v1/leads']?.get?.responses['400']?.description).toContain(
      '[`team_required`](errors#team_required)',
    );
    expect(document.info.description).toContain('[openapi.json](openapi.json)');
    expect(body).not.toContain(ops);
  });

  it("/docs/redoc.standalone.js is Redoc's bundle as its package ships it, /docs/reference.js the start script", async () => {
    const bundle = await get('/docs/redoc.standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(Buffer.from(await bundle.arrayBuffer()).equals(readFileSync(REDOC_BUNDLE_FILE))).toBe(true);
    const start = await get('/docs/reference.js');
    expect(start.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await start.text()).toBe(START_SCRIPT);
  });

  it('/docs/errors has a section whose id is each code, with status, title, description and retry advice', async () => {
    const res = await get('/docs/errors');
    expect(res.status).toBe(200);
    const body = await res.text();
    for (const code of ERROR_CODES) {
      const start = body.indexOf(`<section id="${code}">`);
      expect(start, code).toBeGreaterThan(-1);
      const section = body.slice(start, body.indexOf('</section>', start));
      expect(section).toContain(`HTTP ${ERROR_CATALOGUE[code].status}`);
      expect(section).toContain(inlineMarkdown(ERROR_DESCRIPTIONS[code]?.[0] ?? 'missing description'));
      expect(section).toContain(`<strong>Retry:</strong> ${ERROR_CATALOGUE[code].retry}`);
    }
  });

  it('answers only GET and HEAD of its paths; other paths 404 and other methods 405, like its probes', async () => {
    for (const url of ['/docs/nothing', '/docs/errors/', '/docs/openapi.yaml', '/doc', '/docs/redoc.js']) {
      expect((await get(url)).status, url).toBe(404);
    }
    const head = await get('/docs/errors', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect((await get('/docs/', { method: 'POST', body: 'x' })).status).toBe(405);
  });

  it('the public listener answers GET /docs/ with a bare 404: no body, no content type, no Service-Request-Id', async () => {
    for (const url of ['/docs/', '/docs', '/docs/errors', '/docs/openapi.json', '/docs/redoc.standalone.js']) {
      const res = await fetch(`${server.origin}${url}`, { redirect: 'manual' });
      expect(res.status, url).toBe(404);
      expect(await res.text()).toBe('');
      expect(res.headers.get('content-type')).toBeNull();
      expect(res.headers.get('service-request-id')).toBeNull();
    }
  });
});

describe('the docs URL of problem bodies and of the reference', () => {
  let server: RunningServer | undefined;
  afterAll(() => server?.close());

  async function problemFrom(options: Partial<ServerOptions>) {
    server = await listening(options);
    const body = (await (await fetch(`${server.origin}/v1/me`)).json()) as { doc_url: string };
    const page = server.opsOrigin ? await (await fetch(`${server.opsOrigin}/docs/`)).text() : undefined;
    await server.close();
    server = undefined;
    return { body, page };
  }

  it('with --docs-url (CRM_EXPORT_DOCS_URL) bodies and reference link there; a URL with a query is refused', async () => {
    const { body, page } = await problemFrom({
      docsUrl: 'https://docs.example.test',
      ops: { host: '127.0.0.1', port: 0 },
    });
    expect(body.doc_url).toBe('https://docs.example.test/errors#invalid_credentials');
    expect(pageDocument(page ?? '').paths['/v1/leads']?.get?.responses['429']?.description).toContain(
      '(https://docs.example.test/errors#rate_limited)',
    );
    expect(resolveDocsUrl('https://docs.example.test/api/', {})).toBe('https://docs.example.test/api');
    expect(serverSettings({}, { CRM_EXPORT_DOCS_URL: 'http://10.0.0.5:8080/docs' })).toMatchObject({
      docsUrl: 'http://10.0.0.5:8080/docs',
    });
    expect(serverSettings({}, {})).not.toHaveProperty('docsUrl');
    expect(() => serverSettings({}, { CRM_EXPORT_DOCS_URL: 'https://x.test/?a=1' })).toThrow(
      'CRM_EXPORT_DOCS_URL must be an http:// or https:// URL without query or fragment',
    );
    expect(() => resolveDocsUrl('ftp://x.test', {})).toThrow('--docs-url');
  });

  /** Everything of `text` that could send a client to an address: any URL, a loopback or private host. */
  const addresses = (text: string) =>
    text.match(
      /[a-z][a-z0-9+.-]*:\/\/|localhost|\b127\.\d|\b10\.\d|\b192\.168\.|\b172\.(1[6-9]|2\d|3[01])\.|\[::1?\]|0\.0\.0\.0/gi,
    ) ?? [];

  it('without a docs URL no problem body carries the operator listener or any loopback or internal address', async () => {
    for (const ops of [{ host: '127.0.0.1', port: 0 }, { host: '0.0.0.0', port: 0 }, undefined]) {
      server = await listening(ops ? { ops } : {});
      const answers = [
        await fetch(`${server.origin}/v1/me`),
        await fetch(`${server.origin}/v1/me`, { headers: { authorization: 'Bearer crmx_live_nope' } }),
        await fetch(`${server.origin}/v1/health?x=1`),
      ];
      for (const answer of answers) {
        // The request id is random hex: a port number could turn up in it by chance.
        const text = (await answer.text()).replace(/req_[0-9a-f-]{36}/, 'req_');
        const body = JSON.parse(text) as { code: string; type: string; doc_url: string };
        expect(addresses(text), text).toEqual([]);
        if (server.opsOrigin) expect(text).not.toContain(String(new URL(server.opsOrigin).port));
        expect(text).not.toContain(String(server.port));
        expect(body.type).toBe(`tag:crm-export,2026:errors#${body.code}`);
        expect(body.doc_url).toBe(body.type);
      }
      await server.close();
      server = undefined;
    }
    // Every code of the catalogue, as every app without a docs URL builds it.
    const bodies = new ProblemBodies(undefined);
    for (const code of ERROR_CODES) {
      const text = bodies.body(new ApiError(code), 'req_00000000-0000-4000-8000-000000000000');
      expect(addresses(text), code).toEqual([]);
      expect(JSON.parse(text)).toMatchObject({
        type: errorDocUrl(undefined, code),
        doc_url: errorDocUrl(undefined, code),
      });
    }
  });

  it('an app told its docs URL links every problem body there, and so does a reference rendered for it', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const docsUrl = 'https://docs.example.test/crm';
    const app = buildApp({
      store,
      access: fakeAccess(),
      clock: new ManualClock(0),
      limits: DEFAULT_LIMITS,
      logger: false,
      docsUrl,
    });
    try {
      await app.ready();
      const res = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: 'Bearer nope' } });
      expect(JSON.parse(res.body)).toMatchObject({
        code: 'invalid_credentials',
        type: `${docsUrl}/errors#invalid_credentials`,
        doc_url: `${docsUrl}/errors#invalid_credentials`,
      });
      const pages = new DocsPages(() => JSON.parse(OPENAPI_TEXT) as Record<string, unknown>, docsUrl);
      const linked = pageDocument(pages.referenceHtml()).paths['/v1/me']?.get?.responses['429']?.description;
      expect(linked).toContain(`(${docsUrl}/errors#rate_limited)`);
      expect(pages.openapiText()).toBe(OPENAPI_TEXT);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('the operator listener of start by default', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(() => h.close());

  it('an app without a docs URL names each code, not an address (what the tests of problem bodies expect)', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v1/leads?limit=0', headers: auth(KEY_A) });
    expectProblem(res, 400, 'invalid_request', 'limit');
  });

  it('is the API port plus one on 127.0.0.1, any free port with --port 0; a set operator port or host wins', () => {
    expect(resolveOps({}, {}, 3000)).toEqual({ host: '127.0.0.1', port: 3001, orFreePort: true });
    expect(resolveOps({}, {}, 0)).toEqual({ host: '127.0.0.1', port: 0, orFreePort: true });
    expect(resolveOps({}, {}, 65535)).toEqual({ host: '127.0.0.1', port: 0, orFreePort: true });
    expect(resolveOps({ opsHost: '::1' }, {}, 8080)).toEqual({ host: '::1', port: 8081, orFreePort: true });
    expect(resolveOps({}, { CRM_EXPORT_OPS_PORT: '9464' }, 3000)).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(resolveOps({ opsPort: 9100 }, {}, 3000)).toEqual({ host: '127.0.0.1', port: 9100 });
    expect(serverSettings({ port: 4000 }, {}, { opsByDefault: true }).ops).toEqual({
      host: '127.0.0.1',
      port: 4001,
      orFreePort: true,
    });
    // `serve` keeps it off unless configured.
    expect(serverSettings({ port: 4000 }, {}).ops).toBeUndefined();
  });

  it('falls back to any free port when its default port is in use; a set operator port in use stops the start', async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (busy.address() as { port: number }).port;
    const probes = {
      metrics: async () => ({ contentType: 'text/plain', text: '' }),
      readiness: async () => ({ ready: true, body: { status: 'ready', database: 'ok', redis: 'off' } as const }),
    };
    try {
      const fallback = await startOperatorListener({ host: '127.0.0.1', port, orFreePort: true, ...probes });
      expect(fallback.port).not.toBe(port);
      expect(fallback.port).toBeGreaterThan(0);
      await fallback.close();
      await expect(startOperatorListener({ host: '127.0.0.1', port, ...probes })).rejects.toThrow(
        `operator listener: cannot listen on 127.0.0.1:${port}: port ${port} is already in use`,
      );
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});

describe('the error descriptions the served page shows', () => {
  it('are docs/errors.md as it is now (regenerate: npx tsx packages/service/scripts/generate-error-docs.ts)', () => {
    expect(ERROR_DESCRIPTIONS).toEqual(parseErrorDocs(read('docs/errors.md')));
    for (const code of ERROR_CODES) expect(ERROR_DESCRIPTIONS[code]?.length, code).toBeGreaterThan(0);
  });

  it('inline Markdown is escaped HTML: code spans, bold, absolute links kept, links to repository files as text', () => {
    expect(inlineMarkdown('a <b> `x<y>` **z** [w](limits.md#a) [v](https://e.test/)')).toBe(
      'a &lt;b&gt; <code>x&lt;y&gt;</code> <strong>z</strong> w <a href="https://e.test/">v</a>',
    );
  });
});
