export * from './fault-plan.js';
export * from './fault-proxy.js';
