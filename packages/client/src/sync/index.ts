export * from './mirror-schema.js';
export * from './mirror-status.js';
export * from './mirror-store.js';
export * from './open-mirror.js';
export * from './references.js';
export * from './sync-engine.js';
export * from './sync-engine-options.js';
export * from './sync-lock.js';
