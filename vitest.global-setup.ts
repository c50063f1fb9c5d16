import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

// Tests that spawn `crm-export` or `crm-export-sync` run the compiled dist/, as users do: bring it up to
// date before any test starts (incremental: about half a second when nothing changed).
export default function build(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const out = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { encoding: 'utf8' });
  // A type error still emits JavaScript; `npm test` fails on it in its typecheck step.
  if (out.status !== 0) process.stderr.write(`npm run build reported errors:\n${out.stdout}${out.stderr}\n`);
}
