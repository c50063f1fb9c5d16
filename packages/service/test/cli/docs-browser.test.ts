import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/errors/catalogue.js';
import { errorDocUrl } from '../../src/http/problem.js';
import { CHROMIUM, chromiumAvailable, HeadlessChromium, type Tab } from '../support/headless-chromium.js';
import { REPO_ROOT, type RunningCli, startCli, tempDir } from './cli.js';

// The served reference in a real browser: a `start --port 0` (its operator listener on any free port too),
// problem bodies of every code the test can cause over HTTP, the reference page on the operator listener and
// its link of every code followed to its anchor on the error page.
// Needs Debian's chromium (.ci/run installs it); without it the test is skipped and says so.

const available = chromiumAvailable();
if (!available) {
  console.warn(`docs-browser.test.ts skipped: ${CHROMIUM} is absent (apt-get install chromium to run it)`);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe.skipIf(!available)('the served API reference in headless Chromium', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  const shots = mkdtempSync(join(tmpdir(), 'crm-export-shots-'));
  let server: RunningCli;
  let ops: string;
  let key: string;
  let team: string;
  let browser: HeadlessChromium;
  let tab: Tab;

  beforeAll(async () => {
    browser = HeadlessChromium.launch();
    server = await startCli(['start', '--db', tmp.db('docs'), '--port', '0', '--leads', '1']);
    ops = /^operator listener: (http:\/\/\S+) /m.exec(server.stdout())?.[1] ?? '';
    key = /^ {2}(crmx_live_[0-9A-Za-z]+)$/m.exec(server.stdout())?.[1] ?? '';
    team = /Example teams: (team_[0-9A-Za-z]+)/.exec(server.stdout())?.[1] ?? '';
    tab = await browser.newTab();
  });

  afterAll(async () => {
    await browser?.close();
    if (server) expect(await server.stop()).toBe(0);
    tmp.remove();
    rmSync(shots, { recursive: true, force: true });
  });

  /** The problem body `init` gets from the running server, checked to be of `code`. */
  async function problemOf(code: ErrorCode, path: string, headers: Record<string, string>) {
    const response = await fetch(`${server.base}${path}`, { headers });
    expect(response.headers.get('content-type'), code).toMatch(/^application\/problem\+json/);
    const body = (await response.json()) as { code: string; type: string; doc_url: string };
    expect(body.code).toBe(code);
    return body;
  }

  it('every code links to its anchor on the served error page, reached from the reference page', async () => {
    expect(key).not.toBe('');
    const auth = { authorization: `Bearer ${key}` };
    // The codes a running server answers without operator action: their links as the server builds them.
    const triggered: Partial<Record<ErrorCode, { type: string; doc_url: string }>> = {
      invalid_request: await problemOf('invalid_request', '/leads?limit=0', { ...auth, 'service-team': team }),
      team_required: await problemOf('team_required', '/leads', auth),
      secret_key_in_browser: await problemOf('secret_key_in_browser', '/me', { ...auth, origin: 'https://x.test' }),
      invalid_credentials: await problemOf('invalid_credentials', '/me', {}),
      resource_missing: await problemOf('resource_missing', '/nothing-here', auth),
      team_not_accessible: await problemOf('team_not_accessible', '/leads', { ...auth, 'service-team': 'team_zz9' }),
    };
    // Without --docs-url the bodies name each code and never the operator listener (internal); the public
    // listener answers a bare 404 outside /v1/.
    expect(ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ops).not.toBe(server.base.replace(/\/v1$/, ''));
    const docsUrl = `${ops}/docs`;
    for (const [code, body] of Object.entries(triggered)) {
      expect(body.doc_url).toBe(errorDocUrl(undefined, code as ErrorCode));
      expect(body.type).toBe(body.doc_url);
    }

    // `start` says where the reference is; the public listener does not serve it.
    expect(server.stdout()).toContain(`API reference: ${docsUrl}/\n`);
    const hidden = await fetch(`${server.base.replace(/\/v1$/, '')}/docs/`);
    expect([hidden.status, await hidden.text(), hidden.headers.get('service-request-id')]).toEqual([404, '', null]);
    await tab.goto(`${docsUrl}/`);
    expect(await tab.evaluate<string>('document.title')).toContain('reference');
    const links = await tab.evaluate<Record<string, string>>(
      `Object.fromEntries([...document.querySelectorAll('a.error-link')].map((a) => [a.dataset.code, a.href]))`,
    );
    // One link per code of the catalogue, each to its section of the error page beside the reference.
    expect(Object.keys(links).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) expect(links[code], code).toBe(errorDocUrl(docsUrl, code));
    // The reference lists every endpoint of the committed OpenAPI document.
    const document = JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')) as { paths: object };
    const shown = await tab.evaluate<string[]>(
      `[...document.querySelectorAll('section h3 code')].map((c) => c.textContent)`,
    );
    for (const path of Object.keys(document.paths)) expect(shown, path).toContain(path);
    const reference = await tab.screenshot();

    const anchorState = (code: string) =>
      tab.evaluate<{ exists: boolean; visible: boolean; inView: boolean; target: boolean }>(`(() => {
        const el = document.getElementById(${JSON.stringify(code)});
        if (!el) return { exists: false, visible: false, inView: false, target: false };
        const box = el.getBoundingClientRect();
        return {
          exists: true,
          visible: el.checkVisibility() && box.width > 0 && box.height > 0,
          inView: box.top >= 0 && box.top < window.innerHeight,
          target: el.matches(':target'),
        };
      })()`);

    // Follow the reference page's own link (a click), then every code's link in turn.
    await tab.click('a.error-link[data-code="service_unavailable"]', links.service_unavailable as string);
    expect(await anchorState('service_unavailable')).toEqual({
      exists: true,
      visible: true,
      inView: true,
      target: true,
    });
    for (const code of ERROR_CODES) {
      await tab.goto(links[code] as string);
      expect(await anchorState(code), code).toEqual({ exists: true, visible: true, inView: true, target: true });
    }
    const errors = await tab.screenshot();

    for (const [name, png] of [
      ['reference.png', reference],
      ['errors.png', errors],
    ] as const) {
      const file = join(shots, name);
      writeFileSync(file, png);
      expect(statSync(file).size).toBeGreaterThan(1000);
      expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    }
  });
});
