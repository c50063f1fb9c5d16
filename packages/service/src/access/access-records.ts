import type { Clock } from '../clock.js';
import type { Entity, Store } from '../store/store.js';
import type { IntegrationState } from '../write/commands/integration-state.js';
import type { ApiKeyState } from '../write/commands/key-state.js';
import {
  parseSandboxIntegration,
  type SandboxIntegrationState,
  sandboxIntegrationKey,
} from '../write/commands/meta-state.js';
import type { TeamAccessState } from '../write/commands/team-access.js';
import type { OrganizationState } from '../write/types.js';
import type { Principal } from './access-control.js';
import { TtlCache } from './ttl-cache.js';

// What the access checks read from the store: keys, teams and operator settings, each cached at most
// `cacheMs`, so a revocation or a team change made by any process is seen by every process within that
// time (5 seconds at most by the spec).

export interface KeyRecord {
  key: Entity<ApiKeyState>;
  integration: Entity<IntegrationState> | undefined;
  /** The integration's teams still in the organization they were in when it was created. */
  teams: string[];
}

export interface TeamRecord {
  team: Entity<TeamAccessState> | undefined;
  org: OrganizationState | undefined;
}

export class AccessRecords {
  private readonly keys;
  private readonly teams;
  private readonly settings;

  constructor(
    private readonly store: Store,
    clock: Clock,
    cacheMs: number,
  ) {
    this.keys = new TtlCache<string, KeyRecord | undefined>(clock, cacheMs);
    this.teams = new TtlCache<string, TeamRecord>(clock, cacheMs);
    this.settings = new TtlCache<string, string | undefined>(clock, cacheMs);
  }

  /** The key of `lookupId`, its integration and the teams it reads. */
  key(lookupId: string): Promise<KeyRecord | undefined> {
    return this.keys.get(lookupId, async () => {
      const key = await this.store.getEntity<ApiKeyState>('api_key', lookupId);
      if (!key) return undefined;
      const integration = key.parent
        ? await this.store.getEntity<IntegrationState>('integration', key.parent)
        : undefined;
      const covered: string[] = [];
      for (const team of integration?.state.teams ?? []) {
        const record = await this.team(team);
        if (record.team && (record.team.state.organization ?? null) === integration!.state.organization) {
          covered.push(team);
        }
      }
      return { key, integration, teams: covered };
    });
  }

  /** The team `id` and its organization. */
  team(id: string): Promise<TeamRecord> {
    return this.teams.get(id, async () => {
      const team = await this.store.getEntity<TeamAccessState>('team', id);
      const orgId = team?.state.organization;
      const org = orgId ? (await this.store.getEntity<OrganizationState>('organization', orgId))?.state : undefined;
      return { team, org };
    });
  }

  /** An operator setting (a switch, sandbox faults) by its meta key. */
  meta(key: string): Promise<string | undefined> {
    return this.settings.get(key, () => this.store.getMeta(key));
  }

  /** Sandbox faults of an example key's integration (never read for a live key). */
  async sandboxOf(principal: Principal): Promise<SandboxIntegrationState | undefined> {
    return principal.livemode
      ? undefined
      : parseSandboxIntegration(await this.meta(sandboxIntegrationKey(principal.integrationId)));
  }
}
