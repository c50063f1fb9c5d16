export * from './enums.js';
export * from './envelope.js';
export * from './helpers.js';
export * from './params.js';
export * from './records.js';
