import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmtInt, table } from './harness.js';

// Summarises V8 .cpuprofile files (written by a server started with --cpu-prof): self time by
// function and by where the code lives (our source, a package, Node itself, idle/GC).

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function area(url: string, name: string): string {
  if (name === '(idle)' || name === '(garbage collector)' || name === '(program)') return name;
  if (url === '') return '(native / V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  if (url.startsWith('node:')) return 'node:*';
  const src = /packages\/service\/((?:src|bench)\/[^/]+)/.exec(url);
  return src ? (src[1] as string) : url;
}

/** Tables of the top functions and areas by self time over every profile in `dir`. */
export function summariseProfiles(dir: string, top = 15): string {
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((id, i) => {
      const node = nodes.get(id);
      const us = profile.timeDeltas[i] ?? 0;
      if (!node) return;
      const { functionName, url, lineNumber } = node.callFrame;
      const short = url.replace(/^.*node_modules\//, '').replace(/^.*packages\/service\//, '');
      const fn = `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`.trim();
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
      const a = area(url, functionName);
      byArea.set(a, (byArea.get(a) ?? 0) + us);
      total += us;
    });
  }
  const rows = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => [name.replaceAll('|', '\\|'), fmtInt(us / 1000), `${((100 * us) / total).toFixed(1)}%`]);
  return [
    table(['where', 'self ms', 'share'], ['l', 'r', 'r'], rows(byArea)),
    '',
    table(['function', 'self ms', 'share'], ['l', 'r', 'r'], rows(byFunction)),
    '',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(summariseProfiles(process.argv[2] as string, Number(process.argv[3] ?? 25)));
}
