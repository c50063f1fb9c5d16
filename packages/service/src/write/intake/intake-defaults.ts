/**
 * How long an applied event's id is kept, ms: 7 days. An event re-sent with its id within this window is
 * recognised by id (duplicate or conflict); each source's last seq is kept for ever, so an event re-sent
 * with its seq is a duplicate however late it comes. Retention trims ids older than this, never sooner.
 */
export const INTAKE_ID_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
