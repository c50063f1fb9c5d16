import type {
  AccessControl,
  AccessRequest,
  Principal,
  RateClass,
  Reservation,
} from '../../src/access/access-control.js';
import type { ErrorCode } from '../../src/errors/catalogue.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { SCOPES, type Scope } from '../../src/schemas/enums.js';

// A small in-test AccessControl for the HTTP layer's own rules (firewall, validation, binding,
// errors). It records every call so tests can assert the pipeline's order and its settlements.

export interface FakeKey {
  key: string;
  teams: string[];
  scopes?: Scope[];
}

export class FakeAccess implements AccessControl {
  readonly calls: string[] = [];
  readonly settled: { rateClass: RateClass; items: number; quota: boolean; used: number; failed?: true }[] = [];
  /** Addresses the firewall answers 429 for. */
  readonly blockedIps = new Set<string>();
  /** Team -> refusal code for `checkTeam`. */
  readonly refusedTeams = new Map<string, ErrorCode>();
  /** Endpoint -> switch code for `checkSwitches`. */
  readonly switchedOff = new Map<string, ErrorCode>();
  /** When set, `reserve` throws this 429. */
  reserveError: ApiError | undefined;
  private readonly keys = new Map<string, Principal>();

  constructor(keys: FakeKey[]) {
    keys.forEach((k, i) => {
      this.keys.set(`Bearer ${k.key}`, {
        integrationId: `prn_fake${i}`,
        keyId: `key${i}`,
        name: `fake ${i}`,
        livemode: true,
        last4: k.key.slice(-4),
        teams: k.teams,
        scopes: k.scopes ?? [...SCOPES],
      });
    });
  }

  async firewallBlocked(ip: string, hasWellFormedKey: boolean): Promise<boolean> {
    this.calls.push(`firewall:${hasWellFormedKey}`);
    return this.blockedIps.has(ip);
  }
  async checkSwitches(endpoint: string): Promise<void> {
    this.calls.push(`switches:${endpoint}`);
    const code = this.switchedOff.get(endpoint);
    if (code) throw new ApiError(code);
  }
  async authenticate(request: AccessRequest): Promise<Principal> {
    this.calls.push('authenticate');
    const principal = request.authorization ? this.keys.get(request.authorization) : undefined;
    if (!principal) throw new ApiError('invalid_credentials');
    if (request.origin !== undefined) throw new ApiError('secret_key_in_browser');
    return principal;
  }
  requireScope(principal: Principal, scope: Scope): void {
    this.calls.push(`scope:${scope}`);
    if (!principal.scopes.includes(scope)) throw new ApiError('insufficient_scope');
  }
  async checkTeam(_principal: Principal, team: string): Promise<void> {
    this.calls.push(`team:${team}`);
    const code = this.refusedTeams.get(team);
    if (code) throw new ApiError(code);
  }
  async reserve(_p: Principal, rateClass: RateClass, items: number, quota: boolean): Promise<Reservation> {
    this.calls.push(`reserve:${rateClass}:${items}:${quota}`);
    if (this.reserveError) throw this.reserveError;
    return {
      settle: async (used: number) => {
        this.settled.push({ rateClass, items, quota, used });
        return [];
      },
      fail: async () => {
        this.settled.push({ rateClass, items, quota, used: 0, failed: true });
      },
    };
  }
}
