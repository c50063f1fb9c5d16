import { Compile } from 'typebox/compile';
import { expect } from 'vitest';
import { DEFAULT_DOCS_URL } from '../../src/config.js';
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
    type: `${DEFAULT_DOCS_URL}/errors#${code}`,
    doc_url: `${DEFAULT_DOCS_URL}/errors#${code}`,
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
