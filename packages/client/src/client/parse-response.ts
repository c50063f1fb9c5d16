import { errorFromProblem, firewallError, ServerError } from './errors.js';
import type { TransportResponse } from './transport.js';

/** JSON on success, a typed error otherwise; a body that is not JSON is the firewall's answer. */
export function parseResponse<T>(res: TransportResponse): T {
  const type = res.headers.get('content-type') ?? '';
  let json: unknown;
  let isJson = false;
  if (type.includes('json')) {
    try {
      json = JSON.parse(res.text);
      isJson = json !== null && typeof json === 'object';
    } catch {
      isJson = false;
    }
  }
  if (res.status >= 200 && res.status < 300) {
    if (isJson) return json as T;
    throw new ServerError(`HTTP ${res.status} without a JSON body`, {
      status: res.status,
      code: null,
      requestId: res.headers.get('service-request-id'),
      param: null,
      retryAfter: null,
    });
  }
  if (!isJson) throw firewallError(res.status, res.headers);
  throw errorFromProblem(res.status, json as Record<string, unknown>, res.headers);
}
