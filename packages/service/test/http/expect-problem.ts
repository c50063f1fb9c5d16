import { Compile } from 'typebox/compile';
import { expect } from 'vitest';
import type { ErrorCode } from '../../src/errors/catalogue.js';
import { errorDocUrl } from '../../src/http/problem.js';
import { Problem } from '../../src/schemas/envelope.js';

const problem = Compile(Problem);

type Res = { statusCode: number; body: string; headers: Record<string, unknown> };

/** Asserts an RFC 9457 body of `code` whose request_id equals the Service-Request-Id header. */
export function expectProblem(res: Res, status: number, code: string, param?: string): Record<string, unknown> {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  expect(problem.Check(body)).toBe(true);
  expect(body).toMatchObject({
    status,
    code,
    // Apps built in tests have no docs URL: the code's name, not a link.
    type: errorDocUrl(undefined, code as ErrorCode),
    doc_url: errorDocUrl(undefined, code as ErrorCode),
  });
  expect(body.request_id).toMatch(/^req_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(res.headers['service-request-id']).toBe(body.request_id);
  if (param === undefined) expect(body).not.toHaveProperty('param');
  else expect(body.param).toBe(param);
  return body;
}

/** The body without its random request id, to check that it does not repeat a value sent. */
export function bodyText(res: Res): string {
  return res.body.replace(/req_[0-9a-f-]{36}/g, '');
}
