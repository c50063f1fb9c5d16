export { autoPage } from './client/auto-page.js';
export * from './client/crm-export-client.js';
export * from './client/errors.js';
export * from './client/retry.js';
export * from './client/routes.js';
export * from './client/transport.js';
export * from './client/types.js';
export * from './fault-proxy/index.js';
export * from './sync/index.js';
