import { Command } from 'commander';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { registerIntakeCommands } from '../../src/cli/admin-intake.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { applyIntakeBatch } from '../../src/write/intake/apply-intake.js';
import { describeEachBackend } from '../support/backends.js';
import { captureOutput, releaseOutput } from '../support/captured-output.js';
import { newLead, T0, type World, world } from '../write/events/fixture.js';

// `crm-export admin intake status|quarantine list|retry|drop`: figures, never an event's values.

const SECRET_NAME = 'Ghost\u001b[2J Person';
const renamed = (lead: string, id: string): CrmEvent =>
  ({ type: 'lead.updated', at: T0, lead, id, name: SECRET_NAME, email: 'ghost@example.com' }) as CrmEvent;

describeEachBackend('crm-export admin intake', (makeStore) => {
  let w: World;
  let out: string[];
  beforeEach(async () => {
    w = await world(makeStore);
    out = [];
    captureOutput((chunk) => out.push(chunk));
  });
  afterEach(async () => {
    releaseOutput();
    await w.store.close();
  });

  async function admin(...args: string[]): Promise<string> {
    out = [];
    const program = new Command('crm-export').exitOverride();
    const intake = program.command('admin');
    registerIntakeCommands(intake, async () => ({ store: w.store, close: async () => {} }));
    await program.parseAsync(['admin', ...args], { from: 'user' });
    return out.join('');
  }
  const json = async (...args: string[]) => JSON.parse(await admin(...args, '--json'));
  const post = (first: number, events: CrmEvent[]) =>
    applyIntakeBatch(w.store, w.clock, {
      source: 'crm-main',
      follows: first - 1,
      events: events.map((event, i) => ({ seq: first + i, event })),
    });

  it('status --json gives each source its last seq, last event time, lag, counts and quarantine', async () => {
    await post(1, [newLead('lead_1'), renamed('lead_9', 'ev-2')]);
    expect(await json('intake', 'status')).toEqual([
      {
        source: 'crm-main',
        lastSeq: 2,
        lastEventAt: '2026-01-10T10:00:00.000Z',
        // The command reads the system clock: the lag counts from the producer's time to now.
        lagSeconds: expect.any(Number),
        applied: 1,
        duplicates: 0,
        rejected: 0,
        quarantinedTotal: 1,
        quarantineEvents: 1,
        quarantineOldestSeconds: expect.any(Number),
        updatedAt: new Date(w.clock.now()).toISOString(),
      },
    ]);
    const text = await admin('intake', 'status');
    expect(text).toMatch(/^SOURCE\s+LAST SEQ/);
    expect(text).toContain('crm-main');
  });

  it('quarantine list names source, seq, id, type, lane, code, field and attempts, never a value', async () => {
    await post(1, [renamed('lead_9', 'ev-1')]);
    const listed = await json('intake', 'quarantine', 'list');
    expect(listed).toEqual([
      {
        source: 'crm-main',
        seq: 1,
        id: 'ev-1',
        type: 'lead.updated',
        lane: 'lead:lead_9',
        code: 'unknown_lead',
        field: 'lead',
        attempts: 1,
        ageSeconds: expect.any(Number),
        lastTriedSeconds: expect.any(Number),
      },
    ]);
    const text = await admin('intake', 'quarantine', 'list');
    for (const printed of [text, JSON.stringify(listed)]) {
      expect(printed).not.toContain('Ghost');
      expect(printed).not.toContain('ghost@example.com');
    }
  });

  it('quarantine retry --lane applies the lane once fixed, and is audited', async () => {
    await post(1, [renamed('lead_9', 'ev-1')]);
    await w.apply(newLead('lead_9'));
    const result = await json('intake', 'quarantine', 'retry', '--lane', 'lead:lead_9');
    expect(result).toMatchObject({ applied: 1, refused: 0, events: [{ seq: 1, outcome: 'applied' }] });
    expect(await json('intake', 'quarantine', 'list')).toEqual([]);
    const [entry] = await w.store.listAudit({ limit: 10, action: 'intake.quarantine_retry' });
    expect(entry).toMatchObject({ target: ['lead:lead_9'], outcome: 'ok', details: { applied: 1 } });
  });

  it('quarantine retry needs --lane or --all', async () => {
    await admin('intake', 'quarantine', 'retry');
    expect(process.exitCode).toBe(1);
  });

  it('quarantine drop --source --seq removes one event, asks for --yes off a terminal, and is audited', async () => {
    await post(1, [renamed('lead_9', 'ev-1'), renamed('lead_8', 'ev-2')]);
    await admin('intake', 'quarantine', 'drop', '--source', 'crm-main', '--seq', '1');
    expect(process.exitCode).toBe(1);
    process.exitCode = 0;
    const dropped = await json('intake', 'quarantine', 'drop', '--source', 'crm-main', '--seq', '1', '--yes');
    expect(dropped.map((e: { seq: number }) => e.seq)).toEqual([1]);
    expect((await json('intake', 'quarantine', 'list')).map((e: { seq: number }) => e.seq)).toEqual([2]);
    const [entry] = await w.store.listAudit({ limit: 10, action: 'intake.quarantine_drop' });
    expect(entry).toMatchObject({ target: ['crm-main', '1'], outcome: 'ok', details: { dropped: 1 } });
  });
});
