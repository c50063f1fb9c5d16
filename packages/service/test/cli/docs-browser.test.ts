import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/errors/catalogue.js';
import { endpointErrors } from '../../src/http/endpoint-errors.js';
import { ENDPOINTS } from '../../src/http/endpoints.js';
import { errorDocUrl } from '../../src/http/problem.js';
import { EXAMPLE_ANSWERS } from '../../src/schemas/generated/examples.js';
import { CHROMIUM, chromiumAvailable, HeadlessChromium, type Tab } from '../support/headless-chromium.js';
import { REPO_ROOT, type RunningCli, startCli, tempDir } from './cli.js';

// The served reference in a real browser: a `start --port 0` (its operator listener on any free port too),
// problem bodies of every code the test can cause over HTTP, the reference Redoc renders on the operator
// listener (an endpoint's parameters, error codes and example answer; nothing fetched from elsewhere) and
// its link of every code followed to its anchor on the error page. The screenshots stay in
// packages/service/test-output/ (not committed) for a person to look at.
// Needs Debian's chromium (.ci/run installs it); without it the test is skipped and says so.

const available = chromiumAvailable();
if (!available) {
  console.warn(`docs-browser.test.ts skipped: ${CHROMIUM} is absent (apt-get install chromium to run it)`);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const SHOTS = join(REPO_ROOT, 'packages/service/test-output/docs-browser');
/** Redoc's link to its maker shows their logo from their site: the page's policy refuses it, so it is never sent. */
const REDOC_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

describe.skipIf(!available)(
  `the served API reference in headless Chromium${available ? '' : ` (skipped: ${CHROMIUM} is absent)`}`,
  { timeout: 60_000 },
  () => {
    const tmp = tempDir();
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
      tab = await browser.newTab(1400, 900);
    });

    afterAll(async () => {
      await browser?.close();
      if (server) expect(await server.stop()).toBe(0);
      tmp.remove();
    });

    /** The problem body `init` gets from the running server, checked to be of `code`. */
    async function problemOf(code: ErrorCode, path: string, headers: Record<string, string>) {
      const response = await fetch(`${server.base}${path}`, { headers });
      expect(response.headers.get('content-type'), code).toMatch(/^application\/problem\+json/);
      const body = (await response.json()) as { code: string; type: string; doc_url: string };
      expect(body.code).toBe(code);
      return body;
    }

    it("the reference shows an endpoint's parameters, error codes and example, loads nothing from elsewhere, and links each code to its entry", async () => {
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
      // Redoc renders once its bundle has read the document the page holds.
      await waitFor(tab, `document.querySelectorAll('[id^="operation/"]').length > 0`);
      // Every endpoint of the committed OpenAPI document has its section.
      const document = JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')) as {
        paths: Record<string, Record<string, { operationId: string }>>;
      };
      const sections = await tab.evaluate<string[]>(
        `[...document.querySelectorAll('[id^="operation/"]')].map((e) => e.id)`,
      );
      for (const item of Object.values(document.paths)) {
        for (const operation of Object.values(item)) expect(sections).toContain(`operation/${operation.operationId}`);
      }
      // GET /v1/leads: its parameters, the codes it can answer (each linked to its entry), its example answer.
      const leads = ENDPOINTS.find((e) => e.name === 'leads.list')!;
      const shown = await tab.evaluate<{ text: string; links: Record<string, string> }>(`(() => {
      const section = document.getElementById('operation/leads.list');
      const links = [...section.querySelectorAll('a[href*="errors#"]')].map((a) => [a.hash.slice(1), a.href]);
      return { text: section.innerText, links: Object.fromEntries(links) };
    })()`);
      for (const name of ['limit', 'cursor', 'board', 'stage', 'status', 'service-team']) {
        expect(shown.text).toContain(name);
      }
      expect(Object.keys(shown.links).sort()).toEqual(endpointErrors(leads).sort());
      for (const code of endpointErrors(leads)) expect(shown.links[code], code).toBe(errorDocUrl(docsUrl, code));
      const example = EXAMPLE_ANSWERS['leads.list'] as { data: { id: string; surname: string }[] };
      // The 200's example is the sample shown first, in the panel beside the endpoint.
      expect(shown.text).toContain(`"id": "${example.data[0]?.id}"`);
      expect(shown.text).toContain(`"surname": "${example.data[0]?.surname}"`);
      // Over the whole page: a link for every code the public API answers, each to its entry on the error
      // page. The internal listener's codes (operator tokens, intake, management) are on the error page only.
      const publicCodes = ERROR_CODES.filter((code) => ENDPOINTS.some((e) => endpointErrors(e).includes(code)));
      const links = await tab.evaluate<Record<string, string>>(
        `Object.fromEntries([...document.querySelectorAll('a[href*="errors#"]')].map((a) => [a.hash.slice(1), a.href]))`,
      );
      expect(Object.keys(links).sort()).toEqual([...publicCodes].sort());
      for (const code of publicCodes) expect(links[code], code).toBe(errorDocUrl(docsUrl, code));
      await tab.evaluate(`document.getElementById('operation/leads.list').scrollIntoView()`);
      const reference = await tab.screenshot();

      // Nothing was sent anywhere but this operator listener, and nothing failed on the page.
      const requests = tab.requests();
      expect(requests.filter((r) => !r.blockedReason && !r.url.startsWith(`${ops}/`))).toEqual([]);
      expect(requests.filter((r) => r.blockedReason).map((r) => `${r.blockedReason} ${r.url}`)).toEqual(
        requests.filter((r) => r.url === REDOC_LOGO).map(() => `csp ${REDOC_LOGO}`),
      );
      expect(tab.console().filter((line) => !line.includes(REDOC_LOGO))).toEqual([]);

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
      await tab.click('a[href$="errors#service_unavailable"]', links.service_unavailable as string);
      expect(await anchorState('service_unavailable')).toEqual({
        exists: true,
        visible: true,
        inView: true,
        target: true,
      });
      for (const code of ERROR_CODES) {
        await tab.goto(errorDocUrl(docsUrl, code));
        expect(await anchorState(code), code).toEqual({ exists: true, visible: true, inView: true, target: true });
      }
      const errors = await tab.screenshot();

      mkdirSync(SHOTS, { recursive: true });
      for (const [name, png] of [
        ['reference.png', reference],
        ['errors.png', errors],
      ] as const) {
        const file = join(SHOTS, name);
        writeFileSync(file, png);
        expect(statSync(file).size).toBeGreaterThan(1000);
        expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
      }
    });
  },
);

/** Waits until `expression` is true in the page (Redoc renders after the page has loaded). */
async function waitFor(tab: Tab, expression: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await tab.evaluate<boolean>(expression))) {
    if (Date.now() > deadline) throw new Error(`the page never showed ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
