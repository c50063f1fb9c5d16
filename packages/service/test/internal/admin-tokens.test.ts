import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../cli/cli.js';

// `crm-export admin tokens create|list|revoke` (docs/internal-listener.md): the token is printed once and
// never listed, each change is in the audit trail with the token's name and lookup id, never the token.

describe('admin tokens', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('create prints the token once; list never shows it; revoke ends it; both changes are audited', async () => {
    const db = tmp.db('tokens');
    expect((await runCli(['migrate', '--db', db])).code).toBe(0);
    const created = await runCli([
      'admin',
      'tokens',
      'create',
      '--db',
      db,
      '--name',
      'crm-relay',
      '--scope',
      'intake,read',
      '--json',
      '--actor',
      'ops-anna',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const made = JSON.parse(created.stdout) as { token: string; name: string; scopes: string[]; id: string };
    expect(made.token).toMatch(/^cxo_[0-9A-Za-z]{44}$/);
    expect(made).toMatchObject({ name: 'crm-relay', scopes: ['intake', 'read'] });

    const listed = await runCli(['admin', 'tokens', 'list', '--db', db, '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ name: 'crm-relay', status: 'active', scopes: ['intake', 'read'], lastUsedAt: null }),
    ]);
    expect(listed.stdout).not.toContain(made.token);
    expect(listed.stdout).not.toContain('digest');

    const again = await runCli(['admin', 'tokens', 'create', '--db', db, '--name', 'crm-relay', '--scope', 'intake']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already named crm-relay');
    const badScope = await runCli(['admin', 'tokens', 'create', '--db', db, '--name', 'x', '--scope', 'admin']);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain('scope must be one of intake, read, keys, operate');

    const revoked = await runCli(['admin', 'tokens', 'revoke', 'crm-relay', '--db', db, '--json']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ name: 'crm-relay', status: 'revoked' });

    const audit = await runCli(['admin', 'audit', 'list', '--db', db, '--json']);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).not.toContain(made.token);
    const entries = JSON.parse(audit.stdout) as { action: string; actor: string; outcome: string; target: string[] }[];
    const ours = entries.filter((e) => e.action.startsWith('operator_token.'));
    expect(ours.map((e) => [e.action, e.outcome, e.target])).toEqual(
      expect.arrayContaining([
        ['operator_token.create', 'ok', ['crm-relay']],
        ['operator_token.create', 'invalid_argument', ['crm-relay']],
        ['operator_token.revoke', 'ok', ['crm-relay']],
      ]),
    );
    expect(ours.find((e) => e.action === 'operator_token.create' && e.outcome === 'ok')?.actor).toBe('ops-anna');
  });
});
