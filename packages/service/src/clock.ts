/** The time source. Tests pass a controllable one; everything time-dependent takes it. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse('2026-01-15T09:00:00.000Z')) {}
  now(): number {
    return this.ms;
  }
  set(ms: number | string): void {
    this.ms = typeof ms === 'string' ? Date.parse(ms) : ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** ISO 8601 UTC with millisecond precision, as every timestamp of the API. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
