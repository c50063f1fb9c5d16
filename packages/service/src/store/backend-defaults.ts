// Each backend's defaults, outside the backend folders: settings.ts states them as the defaults of its
// variables without importing a backend (only open-store.ts picks one).

export const SQLITE_DEFAULTS = {
  /**
   * MiB of a SQLite database file its reader connection maps into memory unless `CRM_EXPORT_SQLITE_MMAP_MIB`
   * says otherwise. A mapped page is read without a system call or a copy; SQLite maps at most 2 GiB less
   * 64 KiB of a file (its build's cap) and reads the rest through the file as before.
   */
  readerMmapMib: 2048,
} as const;

export const POSTGRES_DEFAULTS = {
  schema: 'public',
  poolSize: 10,
  statementTimeoutMs: 15_000,
  connectTimeoutMs: 10_000,
  applicationName: 'crm-export',
} as const;
