import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, chromiumAvailable } from '../support/headless-chromium.js';
import { cliJson, type RunningCli, runCli, startCli, tempDir } from './cli.js';

// The console in Debian's headless Chromium, driven by playwright-core, against `crm-export start` as a
// user runs it: sign in with a token from `admin tokens create`, create an integration and see its key once,
// call the public API with it, roll it, revoke it, watch the API refuse it, and find the refusal in the
// request log and the revoke in the audit trail. A reading token cannot revoke; an organization name from
// the CRM holding markup and terminal escapes shows as text. Screenshots go to a folder in the OS temp dir,
// printed below. One browser for the file. Skipped, and saying so, where /usr/bin/chromium is absent.

const available = chromiumAvailable();
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** What the organization is renamed to by the CRM: markup, an event handler and terminal escape sequences. */
const HOSTILE_NAME = '<img src=x onerror="document.title=\'owned\'"><b>Acme</b>\u001b[31m\u001b]0;title\u0007';
/** The same name as the console shows it: the markup as text, each control character as an escape. */
const SHOWN_NAME = '<img src=x onerror="document.title=\'owned\'"><b>Acme</b>\\x1b[31m\\x1b]0;title\\x07';

describe.skipIf(!available)(
  `the console in headless Chromium${available ? '' : ` (skipped: ${CHROMIUM} is absent)`}`,
  { timeout: 120_000 },
  () => {
    const tmp = tempDir();
    const shots = mkdtempSync(join(tmpdir(), 'crm-export-console-shots-'));
    let server: RunningCli;
    let internal: string;
    let team: string;
    let browser: Browser;
    const contexts: BrowserContext[] = [];
    /** What every page wrote to its console, and every request it sent elsewhere than the internal listener. */
    const problems: string[] = [];

    const admin = async <T>(...args: string[]) => cliJson<T>(['admin', ...args, '--db', tmp.db('console'), '--json']);
    const shoot = async (page: Page, name: string) => {
      const file = join(shots, `${name}.png`);
      writeFileSync(file, await page.screenshot({ fullPage: true }));
      expect(statSync(file).size).toBeGreaterThan(1000);
    };
    const newPage = async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: internal });
      contexts.push(context);
      const page = await context.newPage();
      page.on('console', (m) => problems.push(`console ${m.type()}: ${m.text()}`));
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('dialog', (d) => problems.push(`dialog: ${d.message()}`));
      page.on('request', (r) => {
        if (!r.url().startsWith(`${internal}/console/`)) problems.push(`request elsewhere: ${r.url()}`);
      });
      return page;
    };
    const signIn = async (page: Page, token: string) => {
      await page.goto(`${internal}/console/`);
      await page.fill('#token', token);
      await Promise.all([page.waitForURL(`${internal}/console/integrations`), page.click('#sign-in')]);
    };
    const me = (key: string) => fetch(`${server.base}/me`, { headers: { authorization: `Bearer ${key}` } });

    beforeAll(async () => {
      console.log(`console-browser screenshots: ${shots}`);
      [browser, server] = await Promise.all([
        chromium.launch({ executablePath: CHROMIUM, args: FLAGS }),
        startCli(['start', '--db', tmp.db('console'), '--port', '0', '--leads', '1']),
      ]);
      internal = /^internal listener: (http:\/\/\S+) /m.exec(server.stdout())?.[1] ?? '';
      team = /Example teams: (team_[0-9A-Za-z]+)/.exec(server.stdout())?.[1] ?? '';
      // The CRM renames the organization (an event as the CRM sends it).
      const [org] = await admin<{ id: string }[]>('orgs', 'list');
      const events = join(tmp.dir, 'rename.ndjson');
      const at = new Date().toISOString();
      writeFileSync(
        events,
        `${JSON.stringify({ type: 'organization.upsert', at, organization: org?.id, name: HOSTILE_NAME, plan: 'api_included' })}\n`,
      );
      const ingested = await runCli(['ingest', events, '--db', tmp.db('console')]);
      expect(ingested.code, ingested.stderr).toBe(0);
    });

    afterAll(async () => {
      for (const context of contexts) await context.close();
      await browser?.close();
      if (server) expect(await server.stop()).toBe(0);
      tmp.remove();
      console.log(`console-browser screenshots: ${shots}`);
    });

    it('sign in, create an integration and see its key once, call /v1/me, roll, revoke, see the API refuse it within 5 s, find the refusal in the request log and the revoke in the audit trail', async () => {
      expect(internal).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const { token } = await admin<{ token: string }>('tokens', 'create', '--name', 'me', '--scope', 'read,keys');
      const page = await newPage();
      await signIn(page, token);
      expect(await page.textContent('#operator-name')).toBe('me');
      // The session is an HttpOnly, SameSite=Strict cookie; the token itself is nowhere in the browser.
      const cookies = await page.context().cookies();
      expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([
        ['crmx_console', true, 'Strict', '/console'],
      ]);
      expect(JSON.stringify(cookies)).not.toContain(token);
      expect(await page.content()).not.toContain(token);
      await shoot(page, '01-integrations');

      await Promise.all([page.waitForURL(`${internal}/console/integrations/new`), page.click('#create-link')]);
      await page.fill('#name', 'Console test');
      await page.fill('#teams', team);
      await Promise.all([page.waitForURL(`${internal}/console/integrations`), page.click('#create')]);
      const key = (await page.textContent('#new-key')) ?? '';
      expect(key).toMatch(/^crmx_live_[0-9A-Za-z]+$/);
      await page.click('#copy-key');
      await expect.poll(() => page.textContent('#copy-state')).toBe('Copied.');
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(key);
      await shoot(page, '02-key-shown-once');
      expect((await me(key)).status).toBe(200);

      await Promise.all([page.waitForURL(/\/console\/integrations\/prn_/), page.click('#to-integration')]);
      const detail = page.url();
      const id = detail.split('/').at(-1) as string;
      // Never shown again: not on its page, not after a reload.
      expect(await page.content()).not.toContain(key);
      await page.reload();
      expect(await page.content()).not.toContain(key);
      expect(await page.textContent('#organization-name')).toBe(SHOWN_NAME);
      // uPlot, served from the package, draws 24 hours of items per hour.
      await page.waitForSelector('#usage-chart canvas');
      expect(await page.getAttribute('#usage-chart', 'data-points')).toBe('24');

      await Promise.all([page.waitForURL(`${detail}/roll`), page.click('#roll-link')]);
      await page.check('input[name="grace"][value="1h"]');
      await Promise.all([page.waitForURL(`${detail}/roll`), page.click('#roll')]);
      const rolled = (await page.textContent('#new-key')) ?? '';
      expect(rolled).toMatch(/^crmx_live_/);
      expect(rolled).not.toBe(key);
      expect(await page.textContent('#key-note')).toMatch(/^The old key works until \d{4}-/);
      await shoot(page, '03-rolled');
      // During its grace the old key still works, beside the new one.
      expect([(await me(key)).status, (await me(rolled)).status]).toEqual([200, 200]);

      // Each key's last use, and the address it came from, once the request log is written (about a second).
      await expect
        .poll(
          async () => {
            await page.goto(detail);
            return page.locator('#keys tbody tr').allTextContents();
          },
          { timeout: 10_000 },
        )
        .toEqual([
          expect.stringMatching(/grace.*\d{4}-.*127\.0\.0\.1/),
          expect.stringMatching(/active.*\d{4}-.*127\.0\.0\.1/),
        ]);
      await shoot(page, '04-last-use');
      await Promise.all([page.waitForURL(`${detail}/revoke`), page.click('#revoke-link')]);
      await page.fill('#confirm', id);
      await shoot(page, '05-revoke-confirmation');
      await Promise.all([page.waitForURL(detail), page.click('#revoke')]);
      expect(await page.textContent('#integration-status')).toBe('revoked');
      const revokedAt = Date.now();
      let refused = 0;
      while (refused === 0 && Date.now() - revokedAt < 5000) {
        const status = (await me(rolled)).status;
        if (status === 401) refused = Date.now() - revokedAt;
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(refused, 'refused within 5 seconds of the revoke').toBeGreaterThan(0);
      expect(refused).toBeLessThan(5000);
      expect((await me(key)).status).toBe(401);
      await shoot(page, '06-revoked');

      // The refusal in the request log (the log is written within a second or two), filtered to failures.
      await page.click('#requests-link');
      await expect
        .poll(
          async () => {
            await page.goto(`${detail}/requests?outcome=failed`);
            return page.locator('#requests tbody tr').count();
          },
          { timeout: 15_000 },
        )
        .toBeGreaterThan(0);
      const rows = await page.locator('#requests tbody tr').allTextContents();
      expect(rows.some((row) => row.includes('401') && row.includes('/v1/me'))).toBe(true);
      await shoot(page, '07-request-log');

      await page.goto(`${detail}/audit`);
      const actions = await page.locator('#audit .col-action').allTextContents();
      expect(actions).toContain('integration.revoke');
      expect(actions).toContain('integration.roll');
      expect(actions).toContain('integration.create');
      const trail = await page.locator('#audit tbody tr').allTextContents();
      expect(trail.find((row) => row.includes('integration.revoke'))).toContain('me');
      await shoot(page, '08-audit-trail');
    });

    it('a reading token sees the integration but no revoke button, and the server refuses its revoke', async () => {
      const { token } = await admin<{ token: string }>('tokens', 'create', '--name', 'reader', '--scope', 'read');
      const page = await newPage();
      await signIn(page, token);
      const link = page.locator('#integrations tbody a').first();
      await Promise.all([page.waitForURL(/\/console\/integrations\/prn_/), link.click()]);
      const detail = page.url();
      const id = detail.split('/').at(-1) as string;
      expect(await page.locator('#revoke-link').count()).toBe(0);
      expect(await page.locator('#roll-link').count()).toBe(0);
      await shoot(page, '09-reader');
      // Posting the form anyway, with the session's own CSRF token, from the console's origin.
      const before = problems.length;
      const status = await page.evaluate<number>(`(async () => {
        const csrf = document.querySelector('input[name="_csrf"]').value;
        const body = new URLSearchParams({ _csrf: csrf, confirm: ${JSON.stringify(id)} });
        return (await fetch(${JSON.stringify(`${detail}/revoke`)}, { method: 'POST', body })).status;
      })()`);
      expect(status).toBe(403);
      // The browser notes the refused post; nothing else went wrong.
      expect(problems.splice(before)).toEqual([
        'console error: Failed to load resource: the server responded with a status of 403 (Forbidden)',
      ]);
    });

    it('an organization name holding markup and terminal escapes renders as text', async () => {
      const page = await newPage();
      const { token } = await admin<{ token: string }>('tokens', 'create', '--name', 'viewer', '--scope', 'read');
      await signIn(page, token);
      const cell = page.locator('#integrations tbody tr td:nth-child(3)').first();
      expect(await cell.textContent()).toBe(SHOWN_NAME);
      expect(await cell.locator('*').count()).toBe(0);
      expect(await page.title()).not.toBe('owned');
      await shoot(page, '10-hostile-name');
      // Nothing the pages did broke their policy or left this listener; no script ran from the name.
      expect(problems).toEqual([]);
    });
  },
);
