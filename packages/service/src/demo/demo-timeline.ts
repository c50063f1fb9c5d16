import { iso } from '../clock.js';

const MINUTE = 60_000;

/** Business times of one lead's story: each step a little later than the last, never after `end`. */
export class Timeline {
  private ms: number;

  constructor(
    start: number,
    private readonly end: number,
  ) {
    this.ms = Math.min(start, end);
  }

  /** The current time. */
  get now(): string {
    return iso(this.ms);
  }

  get nowMs(): number {
    return this.ms;
  }

  /** Moves on by `minutes` and returns the new time. */
  after(minutes: number): string {
    this.ms = Math.min(this.ms + Math.round(minutes * MINUTE), this.end);
    return iso(this.ms);
  }

  /** A time `minutes` from now without moving on (bookings are made for later). */
  ahead(minutes: number): string {
    return iso(this.ms + Math.round(minutes * MINUTE));
  }
}
