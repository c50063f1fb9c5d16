export * from './copy.js';
export * from './demo-service.js';
export * from './histories.js';
export * from './torture.js';
