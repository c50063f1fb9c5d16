import { ACTIONS } from '../actions.js';
import { type ManageEndpoint, manageEndpoint } from './endpoint.js';

// Every endpoint of the management API (docs/management.md), one declaration each.

const act = (name: string) => {
  const found = ACTIONS.get(name);
  if (!found) throw new Error(`no action ${name}`);
  return found;
};
const get = (url: string, name: string, path?: Record<string, string>) =>
  manageEndpoint({ method: 'GET', url, action: act(name), ...(path ? { path } : {}) });
const post = (url: string, name: string, path?: Record<string, string>, status?: 201) =>
  manageEndpoint({ method: 'POST', url, action: act(name), ...(path ? { path } : {}), ...(status ? { status } : {}) });

const byId = { id: 'id' };
const byTeam = { team: 'team' };

export const MANAGE_ENDPOINTS: readonly ManageEndpoint[] = [
  get('/organizations', 'organizations.list'),
  post('/organizations', 'organizations.create', undefined, 201),
  post('/organizations/:id/plan', 'organizations.set_plan', byId),
  get('/teams', 'teams.list'),
  get('/teams/:id', 'teams.get', byId),
  post('/teams/:id/state', 'teams.set_state', byId),
  post('/teams/:id/sector', 'teams.set_sector', byId),
  post('/teams/:id/legal', 'teams.set_legal', byId),
  post('/teams/:id/organization', 'teams.set_org', byId),
  post('/teams/:id/holds-data', 'teams.set_holds_data', byId),
  get('/integrations', 'integrations.list'),
  post('/integrations', 'integrations.create', undefined, 201),
  get('/integrations/:id', 'integrations.get', byId),
  post('/integrations/:id/roll', 'integrations.roll', byId),
  post('/integrations/:id/end-old-key', 'integrations.end_old_key', byId),
  post('/integrations/:id/revoke', 'integrations.revoke', byId),
  get('/integrations/:id/allowlist', 'allowlist.get', byId),
  post('/integrations/:id/allowlist', 'allowlist.set', byId),
  post('/integrations/:id/allowlist/add', 'allowlist.add', byId),
  post('/integrations/:id/allowlist/remove', 'allowlist.remove', byId),
  get('/integrations/:id/allowlist/check', 'allowlist.check', byId),
  get('/integrations/:id/usage', 'usage.get', byId),
  get('/integrations/:id/requests', 'requests.list', byId),
  get('/failures', 'failures.list'),
  get('/lockouts', 'lockouts.list'),
  get('/lockouts/addresses', 'lockouts.addresses'),
  post('/lockouts/unlock', 'lockouts.unlock'),
  get('/audit', 'audit.list'),
  get('/switches', 'switches.get'),
  post('/switches/api', 'switches.api'),
  post('/switches/capability', 'switches.capability'),
  get('/sandbox/:team', 'sandbox.show', byTeam),
  post('/sandbox/:team/expire-cursors', 'sandbox.expire_cursors', byTeam),
  post('/sandbox/:team/require-resync', 'sandbox.require_resync', byTeam),
  post('/sandbox/:team/not-ready', 'sandbox.not_ready', byTeam),
  post('/sandbox/:team/spend-rate', 'sandbox.spend_rate', byTeam),
  post('/sandbox/:team/spend-quota', 'sandbox.spend_quota', byTeam),
  post('/sandbox/:team/lock-key', 'sandbox.lock_key', byTeam),
  post('/sandbox/:team/capability', 'sandbox.capability', byTeam),
  post('/sandbox/:team/erase', 'sandbox.erase', byTeam),
  post('/sandbox/:team/delete', 'sandbox.delete', byTeam),
  post('/sandbox/:team/clear', 'sandbox.clear', byTeam),
];
