// Reading the operator listener in tests: a GET, and the sum of a metric's samples in Prometheus text.

export async function opsGet(origin: string, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${origin}${path}`);
  return { status: response.status, body: await response.text() };
}

/** The sum of the samples of `name` whose labels include `labels` (undefined when there is none). */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found[pair[1]!] = pair[2]!;
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) {
      total = (total ?? 0) + Number(match[3]);
    }
  }
  return total;
}
