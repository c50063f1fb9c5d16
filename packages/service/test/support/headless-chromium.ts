import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

// Debian's headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
// messages ended by a NUL byte, commands on fd 3, answers and events on fd 4). No WebSocket, no dependency,
// nothing downloaded: the browser is the machine's own, with a fresh profile that is removed on close.

export const CHROMIUM = '/usr/bin/chromium';
export const chromiumAvailable = (): boolean => existsSync(CHROMIUM);

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--remote-debugging-pipe',
];

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** A request the page made, as the browser's network log saw it. */
export interface PageRequest {
  url: string;
  /** Set when the browser did not send it: `csp` for one the page's policy refused. */
  blockedReason?: string;
}

export interface Tab {
  /** Navigates and waits until the document at `url` (fragment included) has loaded. */
  goto(url: string): Promise<void>;
  /** Evaluates `expression` in the page and returns its value (JSON). */
  evaluate<T>(expression: string): Promise<T>;
  /** Clicks the first element matching `selector` and waits until the page shows `expectedUrl`. */
  click(selector: string, expectedUrl: string): Promise<void>;
  /** A PNG of the viewport. */
  screenshot(): Promise<Buffer>;
  /** Every request the tab made since it opened, in order (data: URLs left out). */
  requests(): PageRequest[];
  /** What the page wrote to its console and what it threw, since the tab opened. */
  console(): string[];
}

export class HeadlessChromium {
  private next = 1;
  private readonly pending = new Map<number, { resolve(m: Message): void; reject(e: Error): void }>();
  private buffer = '';
  private exited = false;
  private readonly listeners = new Map<string, (message: Message) => void>();

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const output = child.stdio[4] as Readable;
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end = this.buffer.indexOf('\0');
      while (end >= 0) {
        const message = JSON.parse(this.buffer.slice(0, end)) as Message;
        this.buffer = this.buffer.slice(end + 1);
        if (message.id !== undefined) {
          const waiter = this.pending.get(message.id);
          this.pending.delete(message.id);
          if (message.error) waiter?.reject(new Error(`chromium: ${message.error.message}`));
          else waiter?.resolve(message);
        } else if (message.sessionId) this.listeners.get(message.sessionId)?.(message);
        end = this.buffer.indexOf('\0');
      }
    });
    child.on('exit', () => {
      this.exited = true;
      for (const waiter of this.pending.values()) waiter.reject(new Error('chromium exited'));
      this.pending.clear();
    });
  }

  static launch(): HeadlessChromium {
    const profile = mkdtempSync(join(tmpdir(), 'crm-export-chromium-'));
    const child = spawn(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
    });
    return new HeadlessChromium(child, profile);
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.reject(new Error('chromium exited'));
    const id = this.next++;
    const message = JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) });
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: (m) => resolve(m.result ?? {}), reject });
      (this.child.stdio[3] as Writable).write(`${message}\0`);
    });
  }

  /** A new tab of `width` x `height` CSS pixels. */
  async newTab(width = 1200, height = 900): Promise<Tab> {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    const call = (method: string, params: Record<string, unknown> = {}) => this.send(method, params, sessionId);
    const requests = new Map<string, PageRequest>();
    const logged: string[] = [];
    this.listeners.set(sessionId, ({ method, params = {} }) => {
      if (method === 'Network.requestWillBeSent') {
        const { requestId, request } = params as { requestId: string; request: { url: string } };
        if (!request.url.startsWith('data:')) requests.set(`${requestId} ${request.url}`, { url: request.url });
      } else if (method === 'Network.loadingFailed') {
        const { requestId, blockedReason } = params as { requestId: string; blockedReason?: string };
        for (const [key, request] of requests) {
          if (blockedReason && key.startsWith(`${requestId} `)) request.blockedReason = blockedReason;
        }
      } else if (method === 'Runtime.consoleAPICalled') {
        const { type, args } = params as { type: string; args: { value?: unknown; description?: string }[] };
        logged.push(`${type}: ${args.map((a) => String(a.value ?? a.description ?? '')).join(' ')}`);
      } else if (method === 'Log.entryAdded') {
        const { entry } = params as { entry: { source: string; level: string; text: string } };
        logged.push(`${entry.source} ${entry.level}: ${entry.text}`);
      } else if (method === 'Runtime.exceptionThrown') {
        const { exceptionDetails } = params as {
          exceptionDetails: { text: string; exception?: { description?: string } };
        };
        logged.push(`exception: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
      }
    });
    await call('Page.enable');
    await call('Network.enable');
    await call('Runtime.enable');
    await call('Log.enable');
    await call('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    const evaluate = async <T>(expression: string): Promise<T> => {
      const { result, exceptionDetails } = (await call('Runtime.evaluate', { expression, returnByValue: true })) as {
        result: { value: T };
        exceptionDetails?: { text: string };
      };
      if (exceptionDetails) throw new Error(`page script failed: ${exceptionDetails.text}`);
      return result.value;
    };
    const arrived = async (url: string) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        // An evaluation during a navigation may land in the old document or fail: try again.
        const state = await evaluate<string>(`location.href + ' ' + document.readyState`).catch(() => '');
        if (state === `${url} complete`) return;
        if (Date.now() > deadline) throw new Error(`page did not arrive at ${url} (last: ${state})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    return {
      goto: async (url) => {
        const { errorText } = (await call('Page.navigate', { url })) as { errorText?: string };
        if (errorText) throw new Error(`navigation to ${url} failed: ${errorText}`);
        await arrived(url);
      },
      evaluate,
      click: async (selector, expectedUrl) => {
        const found = await evaluate<boolean>(
          `(() => { const el = document.querySelector(${JSON.stringify(selector)}); if (!el) return false; el.click(); return true; })()`,
        );
        if (!found) throw new Error(`no element matches ${selector}`);
        await arrived(expectedUrl);
      },
      screenshot: async () => {
        const { data } = (await call('Page.captureScreenshot', { format: 'png' })) as { data: string };
        return Buffer.from(data, 'base64');
      },
      requests: () => [...requests.values()],
      console: () => [...logged],
    };
  }

  async close(): Promise<void> {
    if (!this.exited) {
      const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      await Promise.race([this.send('Browser.close').catch(() => undefined), gone]);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}
