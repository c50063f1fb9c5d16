import cliProgress from 'cli-progress';
import type { IngestProgress } from '../ingest/ingest-file.js';

/** Off a terminal, a plain line at most this often, and none for a run shorter than this. */
const PLAIN_EVERY_MS = 5_000;

export interface ProgressReporter {
  update(progress: IngestProgress): void;
  stop(): void;
}

/**
 * Progress of an ingest on standard error: a bar on a terminal; elsewhere (CI, logs, pipes) one plain
 * line every few seconds, so a long run is never silent and a short one prints nothing extra.
 */
export function ingestProgress(
  stream: NodeJS.WriteStream,
  name: string,
  now: () => number = Date.now,
): ProgressReporter {
  return stream.isTTY ? terminalBar(stream, name) : plainLines(stream, name, now);
}

function terminalBar(stream: NodeJS.WriteStream, name: string): ProgressReporter {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${name} {phase} [{bar}] {percentage}% | {value}/{total} | ETA {eta_formatted}`,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  let applying = false;
  let validated = 0;
  return {
    update(progress) {
      if (progress.phase === 'validating') {
        validated = progress.lines;
        return;
      }
      if (!applying) {
        applying = true;
        bar.start(progress.total, 0, { phase: `validated ${validated} lines, applying` });
      }
      bar.update(progress.events);
    },
    stop() {
      if (applying) bar.stop();
      applying = false;
    },
  };
}

function plainLines(stream: NodeJS.WritableStream, name: string, now: () => number): ProgressReporter {
  const started = now();
  let last = started;
  return {
    update(progress) {
      const at = now();
      if (at - last < PLAIN_EVERY_MS) return;
      last = at;
      const seconds = Math.round((at - started) / 1000);
      stream.write(
        progress.phase === 'validating'
          ? `${name}: validating, ${progress.lines} lines checked (${seconds} s)\n`
          : `${name}: applying, ${progress.events}/${progress.total} events committed (${Math.floor((100 * progress.events) / Math.max(1, progress.total))}%, ${seconds} s)\n`,
      );
    },
    stop() {},
  };
}
