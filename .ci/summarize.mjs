// Adds up the vitest JSON reports of every run and prints the line the CI harness reads.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
const runs = ['node20', 'node24'];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const run of runs) {
  const file = join(dir, `${run}.json`);
  if (!existsSync(file)) {
    console.log(`${run}: no report (the run did not complete)`);
    failed += 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const runSkipped = r.numPendingTests + r.numTodoTests;
  // A suite that failed to load counts as a failure even when no test inside it ran.
  const brokenSuites = r.testResults.filter((t) => t.status === 'failed' && t.assertionResults.length === 0).length;
  console.log(`${run}: ${r.numPassedTests} passed, ${r.numFailedTests + brokenSuites} failed, ${runSkipped} skipped`);
  // The harness shows only the end of the output: name each failure here, with the start of its message.
  for (const file of r.testResults) {
    const where = file.name.slice(file.name.indexOf('packages/'));
    if (file.status === 'failed' && file.assertionResults.length === 0) {
      console.log(`  failed to load: ${where}: ${firstLines(file.message)}`);
    }
    for (const t of file.assertionResults) {
      if (t.status !== 'failed') continue;
      const message = (t.failureMessages ?? []).join('\n');
      // Vitest's JSON report keeps no text for a test that ran out of time, only this placeholder.
      const timedOut = message.startsWith('Error: STACK_TRACE_ERROR') ? ', most likely timed out' : '';
      console.log(`  failed: ${where} > ${t.fullName} (${Math.round(t.duration ?? 0)} ms${timedOut})`);
      console.log(`    ${firstLines(message)}`);
    }
  }
  passed += r.numPassedTests;
  failed += r.numFailedTests + brokenSuites;
  skipped += runSkipped;
}
function firstLines(text) {
  return String(text ?? '')
    .split('\n')
    .slice(0, 6)
    .join('\n    ')
    .slice(0, 1200);
}

console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
