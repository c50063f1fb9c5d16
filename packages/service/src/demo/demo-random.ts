import { base, en, Faker } from '@faker-js/faker';
import { ID_PREFIXES, type IdPrefixed } from '../schemas/enums.js';

/**
 * Every random choice of the demo comes from one seeded faker, ids included (never `newId`, which
 * draws from the system CSPRNG): the same seed gives the same records.
 */
export class DemoRandom {
  readonly faker: Faker;

  constructor(seed: number) {
    this.faker = new Faker({ locale: [en, base] });
    this.faker.seed(seed);
  }

  /** A public id such as `lead_3kTMd92hF0aQ7xVb`. */
  id(kind: IdPrefixed): string {
    return `${ID_PREFIXES[kind]}${this.faker.string.alphanumeric({ length: 16, casing: 'mixed' })}`;
  }

  /** An id of something without a public prefix (organization, submission, message). */
  internalId(prefix: 'org' | 'sub' | 'msg'): string {
    return `${prefix}_${this.faker.string.alphanumeric({ length: 16, casing: 'mixed' })}`;
  }

  int(min: number, max: number): number {
    return this.faker.number.int({ min, max });
  }

  chance(probability: number): boolean {
    return this.faker.number.float({ min: 0, max: 1 }) < probability;
  }

  pick<T>(values: readonly T[]): T {
    return this.faker.helpers.arrayElement(values as T[]);
  }

  /** Some of the values (at least `min`), in their original order. */
  some<T>(values: readonly T[], min = 0, max = values.length): T[] {
    return this.faker.helpers.arrayElements(values as T[], { min, max });
  }

  digits(n: number): string {
    return this.faker.string.numeric({ length: n, allowLeadingZeros: true });
  }
}
