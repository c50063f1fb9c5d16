import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

export interface NumberedLine {
  /** 1-based line number in the file, blank lines counted. */
  line: number;
  text: string;
}

/** The non-blank lines of an NDJSON file or stream, streamed so memory stays flat for any size. */
export async function* ndjsonLines(source: string | Readable): AsyncGenerator<NumberedLine> {
  const input = typeof source === 'string' ? createReadStream(source, { encoding: 'utf8' }) : source;
  if (typeof source !== 'string') source.setEncoding('utf8');
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    // A byte-order mark on the first line is an editor artefact, not part of the JSON.
    const clean = line === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (clean.trim() === '') continue;
    yield { line, text: clean };
  }
}
