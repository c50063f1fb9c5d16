import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AdminError } from '../../errors/admin-error.js';
import {
  checkAllowlistAction,
  createIntegrationAction,
  endOldKeyAction,
  getIntegrationAction,
  listIntegrationsAction,
  revokeIntegrationAction,
  rollKeyAction,
  setAllowlistAction,
} from '../../manage/actions/integrations.js';
import { listOrganizationsAction, listTeamsAction } from '../../manage/actions/organizations.js';
import { act, ConsoleRefusal, mayRun, operatorOf, type PageContext, sendPage } from '../page.js';
import { CONSOLE_PREFIX_PATH, CONSOLE_ROUTE } from '../paths.js';
import { readUsage } from './usage.js';

// The integration pages: the list, one integration (keys, teams, allowlist and its check, usage), create
// (its key shown in that answer only), roll with a grace choice, end the old key, and revoke after a
// confirmation. Each runs the management plane's action; a token without the `keys` scope sees no button
// for a change, and the action refuses it anyway.

type Id = { Params: { id: string } };
type Form = Record<string, string | undefined>;

const GRACES = [
  { value: '1h', label: 'keeps working for 1 hour' },
  { value: '24h', label: 'keeps working for 24 hours' },
  { value: '7d', label: 'keeps working for 7 days' },
  { value: 'compromised', label: 'is compromised: revoke it now' },
];

/** A list typed in a form: commas, spaces and line breaks separate the entries. */
function entries(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter((e) => e.length > 0);
}

function field(request: FastifyRequest, name: string): string | undefined {
  const value = (request.body as Form | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/** Organization and team names by id (names come from the CRM: the pages show them as text). */
async function names(page: PageContext) {
  const [organizations, teams] = await Promise.all([
    act(page, listOrganizationsAction, {}),
    act(page, listTeamsAction, {}),
  ]);
  return {
    organization: new Map(organizations.map((o) => [o.id, o.name])),
    team: new Map(teams.map((t) => [t.id, t.name])),
  };
}

export function registerIntegrationPages(
  app: FastifyInstance,
  context: (request: FastifyRequest) => PageContext,
): void {
  app.get<{ Querystring: { parent?: string } }>('/integrations', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    const parent = request.query.parent?.trim() || undefined;
    const [list, known] = await Promise.all([act(page, listIntegrationsAction, parent ? { parent } : {}), names(page)]);
    const integrations = list.map((i) => {
      const used = i.keys
        .map((k) => k.lastUsedAt)
        .filter((at): at is string => typeof at === 'string')
        .sort()
        .at(-1);
      return {
        ...i,
        organizationName: i.organization ? (known.organization.get(i.organization) ?? i.organization) : '(none)',
        liveKeys: i.keys.filter((k) => k.status === 'active' || k.status === 'grace').length,
        lastUsed: used ?? 'never',
      };
    });
    return sendPage(reply, request, 'integrations', { title: 'Integrations', integrations, parent });
  });

  app.get('/integrations/new', CONSOLE_ROUTE, (request, reply) => {
    const page = context(request);
    // The page's one purpose is a change: a reading token is refused here as on the post.
    if (!mayRun(operatorOf(page.request), 'keys')) {
      throw new ConsoleRefusal(403, 'insufficient_scope', 'Creating an integration needs a token with the keys scope.');
    }
    return sendPage(reply, request, 'new-integration', { title: 'Create an integration' });
  });

  app.post('/integrations', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    const name = field(request, 'name')?.trim() ?? '';
    const created = await act(page, createIntegrationAction, {
      name,
      teams: entries(field(request, 'teams')),
      allowlist: entries(field(request, 'allowlist')),
    });
    return sendPage(reply.code(201), request, 'key-once', {
      title: 'Integration created',
      heading: `Integration ${created.integration.name} created`,
      key: created.key,
      integration: created.integration.id,
    });
  });

  app.get<Id & { Querystring: { check?: string } }>('/integrations/:id', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    const { id } = request.params;
    const [integration, known] = await Promise.all([act(page, getIntegrationAction, { id }), names(page)]);
    const address = request.query.check?.trim();
    let check: Record<string, unknown> | undefined;
    if (address) {
      try {
        check = await act(page, checkAllowlistAction, { id, address });
      } catch (error) {
        if (!(error instanceof AdminError)) throw error;
        check = { address, allowed: false, error: error.message };
      }
    }
    return sendPage(reply, request, 'integration', {
      title: integration.name,
      chart: true,
      integration,
      organizationName: integration.organization
        ? (known.organization.get(integration.organization) ?? integration.organization)
        : '(none)',
      teams: integration.teams.map((t) => ({ id: t, name: known.team.get(t) ?? '' })),
      check,
      usage: await readUsage(page, integration),
    });
  });

  app.get<Id>('/integrations/:id/roll', CONSOLE_ROUTE, async (request, reply) => {
    const integration = await act(context(request), getIntegrationAction, { id: request.params.id });
    return sendPage(reply, request, 'roll', { title: 'Roll the key', integration, graces: GRACES });
  });

  app.post<Id>('/integrations/:id/roll', CONSOLE_ROUTE, async (request, reply) => {
    const grace = field(request, 'grace');
    if (!GRACES.some((g) => g.value === grace)) {
      throw new ConsoleRefusal(400, 'invalid_argument', 'Choose how long the current key keeps working.');
    }
    const rolled = await act(
      context(request),
      rollKeyAction,
      grace === 'compromised'
        ? { id: request.params.id, compromised: true }
        : { id: request.params.id, grace: grace as '1h' | '24h' | '7d' },
    );
    return sendPage(reply, request, 'key-once', {
      title: 'Key rolled',
      heading: 'New key',
      key: rolled.key,
      integration: rolled.integration,
      note: rolled.graceEndsAt
        ? `The old key works until ${rolled.graceEndsAt}.`
        : 'The old key is revoked: the API refuses it within 5 seconds.',
    });
  });

  app.post<Id>('/integrations/:id/end-old-key', CONSOLE_ROUTE, async (request, reply) => {
    await act(context(request), endOldKeyAction, { id: request.params.id });
    return reply.redirect(`${CONSOLE_PREFIX_PATH}/integrations/${encodeURIComponent(request.params.id)}`, 303);
  });

  app.get<Id>('/integrations/:id/revoke', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    if (!mayRun(operatorOf(page.request), 'keys')) {
      throw new ConsoleRefusal(403, 'insufficient_scope', 'Revoking needs a token with the keys scope.');
    }
    const integration = await act(page, getIntegrationAction, { id: request.params.id });
    return sendPage(reply, request, 'revoke', { title: 'Revoke', integration });
  });

  app.post<Id>('/integrations/:id/revoke', CONSOLE_ROUTE, async (request, reply) => {
    const { id } = request.params;
    if (field(request, 'confirm')?.trim() !== id) {
      throw new ConsoleRefusal(400, 'confirmation_required', `Type ${id} to confirm the revocation.`);
    }
    await act(context(request), revokeIntegrationAction, { id });
    return reply.redirect(`${CONSOLE_PREFIX_PATH}/integrations/${encodeURIComponent(id)}`, 303);
  });

  app.post<Id>('/integrations/:id/allowlist', CONSOLE_ROUTE, async (request, reply) => {
    const { id } = request.params;
    await act(context(request), setAllowlistAction, { id, entries: entries(field(request, 'entries')) });
    return reply.redirect(`${CONSOLE_PREFIX_PATH}/integrations/${encodeURIComponent(id)}#allowlist-section`, 303);
  });
}
