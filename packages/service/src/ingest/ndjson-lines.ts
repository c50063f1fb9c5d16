import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

export interface NumberedLine {
  /** 1-based line number in the file, blank lines counted. */
  line: number;
  text: string;
}

/** The non-blank lines of an NDJSON file, streamed so memory stays flat for any file size. */
export async function* ndjsonLines(path: string): AsyncGenerator<NumberedLine> {
  const lines = createInterface({
    input: createReadStream(path, { encoding: 'utf8' }),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    // A byte-order mark on the first line is an editor artefact, not part of the JSON.
    const clean = line === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (clean.trim() === '') continue;
    yield { line, text: clean };
  }
}
