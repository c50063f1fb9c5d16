/**
 * MiB of a SQLite database file its reader connection maps into memory unless `CRM_EXPORT_SQLITE_MMAP_MIB`
 * says otherwise. A mapped page is read without a system call or a copy; SQLite maps at most 2 GiB less
 * 64 KiB of a file (its build's cap) and reads the rest through the file as before.
 */
export const DEFAULT_READER_MMAP_MIB = 2048;
