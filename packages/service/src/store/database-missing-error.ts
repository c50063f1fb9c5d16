/** The database a command needs does not exist or has not been migrated (`crm-export migrate` creates it). */
export class DatabaseMissingError extends Error {
  override readonly name = 'DatabaseMissingError';
}
