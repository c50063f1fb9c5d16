import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/catalogue.js';

describe('ApiError', () => {
  it('takes the parameter at fault and the Retry-After seconds by name, never by position', () => {
    const limited = new ApiError('rate_limited', { retryAfter: 12 });
    expect(limited).toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 12, param: undefined });
    const invalid = new ApiError('invalid_request', { param: 'cursor' });
    expect(invalid).toMatchObject({ code: 'invalid_request', status: 400, param: 'cursor', retryAfter: undefined });
  });

  it('carries its title from the catalogue and nothing else when given no options', () => {
    const missing = new ApiError('resource_missing');
    expect(missing).toMatchObject({
      status: 404,
      message: 'No such resource.',
      param: undefined,
      retryAfter: undefined,
    });
  });
});
