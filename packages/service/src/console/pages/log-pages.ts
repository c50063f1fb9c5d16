import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AdminError } from '../../errors/admin-error.js';
import { getIntegrationAction } from '../../manage/actions/integrations.js';
import { listAuditAction } from '../../manage/actions/operate.js';
import { act, type PageContext, sendPage } from '../page.js';
import { CONSOLE_PREFIX_PATH, CONSOLE_ROUTE } from '../paths.js';
import { readRequestLog } from './usage.js';

// The request log of an integration (with its filters) and the audit trail, of one integration or of all.

type Id = { Params: { id: string } };
type AuditQuery = { Querystring: { action?: string; actor?: string } };

/** A filter as typed: blank is no filter. */
const typed = (value: string | undefined) => (value?.trim() ? value.trim() : undefined);

async function auditPage(page: PageContext, query: AuditQuery['Querystring'], target?: string) {
  try {
    const action = typed(query.action);
    const actor = typed(query.actor);
    const { entries } = await act(page, listAuditAction, {
      limit: 200,
      ...(target ? { target } : {}),
      ...(action ? { action } : {}),
      ...(actor ? { actor } : {}),
    });
    return { entries: entries.reverse(), error: undefined };
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    return { entries: [], error: error.message };
  }
}

export function registerLogPages(app: FastifyInstance, context: (request: FastifyRequest) => PageContext): void {
  app.get<AuditQuery>('/audit', CONSOLE_ROUTE, async (request, reply) => {
    const found = await auditPage(context(request), request.query);
    return sendPage(reply, request, 'audit', {
      title: 'Audit trail',
      action: `${CONSOLE_PREFIX_PATH}/audit`,
      query: request.query,
      ...found,
    });
  });

  app.get<Id & AuditQuery>('/integrations/:id/audit', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    const integration = await act(page, getIntegrationAction, { id: request.params.id });
    const found = await auditPage(page, request.query, integration.id);
    return sendPage(reply, request, 'audit', {
      title: `Audit trail of ${integration.name}`,
      integration,
      action: `${CONSOLE_PREFIX_PATH}/integrations/${integration.id}/audit`,
      query: request.query,
      ...found,
    });
  });

  app.get<Id & { Querystring: Record<string, string | undefined> }>(
    '/integrations/:id/requests',
    CONSOLE_ROUTE,
    async (request, reply) => {
      const page = context(request);
      const integration = await act(page, getIntegrationAction, { id: request.params.id });
      const log = await readRequestLog(page, integration.id, request.query);
      return sendPage(reply, request, 'requests', { title: `Request log of ${integration.name}`, integration, ...log });
    },
  );
}
