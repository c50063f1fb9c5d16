import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/cli/options.js';
import { ConfigError } from '../../src/settings/config-error.js';
import { readSetting } from '../../src/settings/read-setting.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { feedWorld, newLead, SECOND, T0, TEAM } from '../feed/feed-world.js';

// The SQLite reader maps the database file into memory (CRM_EXPORT_SQLITE_MMAP_MIB, default 2048), so a page
// read costs no system call. What is mapped is seen where the kernel lists a process's mappings; reads through
// the mapping must see every commit, a file that VACUUM made shorter included.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-mmap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether this process maps `path` itself (not its -wal or -shm companions). */
const mapped = (path: string) =>
  readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .some((line) => line.endsWith(` ${path}`));

const linux = process.platform === 'linux';

describe.runIf(linux)(
  `SQLite reader mapped into memory${linux ? '' : ' (skipped: reads /proc/self/maps, Linux only)'}`,
  () => {
    const stores: Store[] = [];
    afterEach(async () => {
      for (const store of stores.splice(0)) await store.close();
      delete process.env.CRM_EXPORT_SQLITE_MMAP_MIB;
    });

    /** A prepared team with `leads` leads, on a file of its own read through `store`. */
    const world = async (make: () => Promise<Store>, leads: number) => {
      const w = await feedWorld(async () => {
        const store = await make();
        stores.push(store);
        return store;
      });
      for (let i = 0; i < leads; i++) {
        await w.apply(newLead(`lead_M${i}`, { company: `Company ${i} `.repeat(20) }));
        w.clock.advance(SECOND);
      }
      // Committed pages stay in the WAL until a checkpoint copies them into the file, which is what is mapped.
      await w.store.reclaimSpace?.();
      return w;
    };
    /** A store on a new file at `path`, as the service opens it (the reader's map at its default). */
    const migrated = async (path: string) => {
      const store = new SqliteStore({ path });
      await store.migrate();
      return store;
    };
    const page = (store: Store) => store.listPage({ team: TEAM, kind: 'lead', after: 0, limit: 100 });

    it('by default the reader maps the database file, and reads see what was committed', async () => {
      const path = join(dir, 'default.db');
      const w = await world(() => migrated(path), 30);
      expect((await page(w.store)).count).toBe(30);
      expect(mapped(path)).toBe(true);
    });

    it('CRM_EXPORT_SQLITE_MMAP_MIB=0 reads through the file: nothing of it is mapped', async () => {
      process.env.CRM_EXPORT_SQLITE_MMAP_MIB = '0';
      const path = join(dir, 'off.db');
      const w = await world(() => openDb(`sqlite:${path}`, { create: true }), 30);
      expect((await page(w.store)).count).toBe(30);
      expect(mapped(path)).toBe(false);
    });

    it('CRM_EXPORT_SQLITE_MMAP_MIB outside 0-2048 is refused, naming the variable', () => {
      for (const raw of ['4096', '-1', 'lots']) {
        expect(() => readSetting('sqliteMmap', undefined, { CRM_EXPORT_SQLITE_MMAP_MIB: raw })).toThrow(ConfigError);
        expect(() => readSetting('sqliteMmap', undefined, { CRM_EXPORT_SQLITE_MMAP_MIB: raw })).toThrow(
          /CRM_EXPORT_SQLITE_MMAP_MIB must be an integer 0-2048/,
        );
      }
      expect(readSetting('sqliteMmap', undefined, {})).toBe(2048);
    });

    it('a mapped reader sees later commits and a file VACUUM made shorter, byte for byte as an unmapped reader', async () => {
      const path = join(dir, 'shrink.db');
      const w = await world(() => migrated(path), 60);
      const plain = new SqliteStore({ path, readerMmapMib: 0 });
      stores.push(plain);
      const same = async () => {
        const [a, b] = [await page(w.store), await page(plain)];
        expect(a.items.equals(b.items)).toBe(true);
        return a;
      };
      expect((await same()).count).toBe(60);
      for (let i = 0; i < 50; i++) await w.apply({ type: 'lead.deleted', at: T0, lead: `lead_M${i}` });
      expect((await same()).count).toBe(10);
      // The rewrite leaves the file smaller than what the reader mapped before it.
      const before = statSync(path).size;
      await w.store.reclaimSpace?.();
      expect(statSync(path).size).toBeLessThan(before);
      expect((await same()).count).toBe(10);
      // Read from the shorter file, through its mapping (a later page read wholly from the WAL maps nothing).
      expect(mapped(path)).toBe(true);
      await w.apply(newLead('lead_Late', {}));
      expect((await same()).count).toBe(11);
    });
  },
);
