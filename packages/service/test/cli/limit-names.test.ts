import { describe, expect, it } from 'vitest';
import { resolveLimits, serverSettings } from '../../src/cli/options.js';
import { ConfigError } from '../../src/settings/config-error.js';

// A name in CRM_EXPORT_LIMITS is one of the limits' own names: the names every JavaScript object inherits
// are not limits, and an unknown name stops the command (docs/configuration.md).

const INHERITED = ['toString', 'constructor', 'valueOf', '__proto__', 'hasOwnProperty', 'isPrototypeOf'];

describe('CRM_EXPORT_LIMITS names', () => {
  it('a name every object inherits (toString, constructor, valueOf, __proto__) is an unknown limit', () => {
    for (const name of INHERITED) {
      for (const value of [1, 'x', {}, null]) {
        // Written as text: `__proto__` in an object literal would set the prototype, not a member.
        const env = { CRM_EXPORT_LIMITS: `{"${name}":${JSON.stringify(value)},"itemsPerMinute":5000}` };
        expect(() => resolveLimits(env), `${name}: ${JSON.stringify(value)}`).toThrow(
          `CRM_EXPORT_LIMITS: unknown limit ${name} (known: itemsPerMinute, `,
        );
        // serve and start read the limits before opening anything.
        expect(() => serverSettings({}, env), name).toThrow(ConfigError);
      }
    }
  });
});
