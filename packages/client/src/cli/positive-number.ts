import { InvalidArgumentError } from 'commander';

/** A commander parser for an option that takes a number above zero. */
export const positiveNumber = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number`);
  return n;
};
