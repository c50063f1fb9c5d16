#!/usr/bin/env node
// Runs the compiled command (dist/). Committed, unlike dist/, so npm links the bin at install time,
// before the `prepare` build has run.
await import('../dist/main.js');
