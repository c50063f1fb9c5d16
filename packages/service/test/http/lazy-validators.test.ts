import { describe, expect, it } from 'vitest';
import { queryAwareValidatorFactory } from '../../src/http/query-validator.js';

// Route validators are compiled on their first request rather than when the app is ready (start-up time,
// issue 30); what they answer is the same.

type Build = (
  external: unknown,
  options: unknown,
) => (route: { schema: unknown; httpPart?: string }) => ((data: unknown) => boolean) & { errors?: unknown };

const build = queryAwareValidatorFactory() as unknown as Build;
const options = { customOptions: { coerceTypes: true, useDefaults: true, removeAdditional: false, allErrors: false } };

describe('route validators', () => {
  it('are compiled on first use: a schema Ajv cannot compile fails at the first request, not before', () => {
    const compile = build({}, options);
    const validate = compile({ schema: { type: 'no-such-type' }, httpPart: 'body' });
    expect(() => validate({})).toThrow();
  });

  it('answer and report errors as the compiled validator does, query integers checked for their spelling first', () => {
    const compile = build({}, options);
    const schema = {
      type: 'object',
      properties: { limit: { type: 'integer', minimum: 1, maximum: 100 } },
      additionalProperties: false,
    };
    const validate = compile({ schema, httpPart: 'querystring' });
    expect(validate({ limit: '25' })).toBe(true);
    expect(validate.errors).toBeNull();
    expect(validate({ limit: '1e1' })).toBe(false);
    expect(validate.errors).toMatchObject([{ instancePath: '/limit', params: { type: 'integer' } }]);
    expect(validate({ limit: '500' })).toBe(false);
    expect(validate.errors).toMatchObject([{ instancePath: '/limit', keyword: 'maximum' }]);
    expect(validate({ other: '1' })).toBe(false);
    expect(validate.errors).toMatchObject([{ keyword: 'additionalProperties' }]);
  });
});
