// Starts the real service the way a user would: `crm-export demo`, `admin integrations create`, `serve`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const SERVICE_BIN = resolve(here, '../../../service/bin/crm-export.js');
export const SYNC_BIN = resolve(here, '../../bin/crm-export-sync.js');

/** Null when the service's commands this test needs exist; otherwise the reason to skip. */
export function serviceUnavailableReason(): string | null {
  if (!existsSync(SERVICE_BIN)) return `${SERVICE_BIN} does not exist yet`;
  const needs: [string[], string[]][] = [
    [['--help'], ['serve', 'demo', 'ingest', 'admin']],
    [
      ['admin', 'integrations', 'create', '--help'],
      ['--teams', '--json'],
    ],
  ];
  for (const [args, words] of needs) {
    const out = spawnSync(process.execPath, [SERVICE_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
    const missing = words.filter((w) => !out.stdout?.includes(w));
    if (out.status !== 0 || missing.length > 0)
      return `crm-export ${args.join(' ')} does not offer ${missing.join(', ')} yet`;
  }
  return null;
}

export function runService(args: string[], input?: string): string {
  const out = spawnSync(process.execPath, [SERVICE_BIN, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (out.status !== 0) throw new Error(`crm-export ${args[0]} failed (${out.status}): ${out.stderr.slice(-2000)}`);
  return out.stdout;
}

/** Runs `crm-export serve` on a free port and resolves with its `/v1` base URL. */
export async function startServe(
  db: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = spawn(process.execPath, [SERVICE_BIN, 'serve', '--db', db, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let err = '';
  child.stderr?.on('data', (c: Buffer) => {
    err = (err + c.toString()).slice(-4000);
  });
  const baseUrl = await new Promise<string>((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 60_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /serving (http:\/\/\S+\/v1)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  return { child, baseUrl };
}
