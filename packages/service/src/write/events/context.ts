import type { Clock } from '../../clock.js';
import type { Entity, EntityKind, WriteTx } from '../../store/store.js';
import type { BoardState, LeadState, MemberState, StageState, TeamState } from '../types.js';
import { CachedTx } from './cached-tx.js';
import { WriteError } from './write-error.js';

export interface CrmOptions {
  /** Seconds a connected-PBX call must last to count as answered. */
  answeredCallFloorSeconds: number;
  /** Newest messages of a lead the response facet reads; more sets `coverage.truncated`. */
  responseMessageWindow: number;
  /**
   * Feed entries a batch supersedes itself are not written for a team no key names yet (neither
   * prepared nor requested): the demo's compaction applied before writing (docs/feed.md, "Demo data").
   */
  dropSupersededOfUnreadTeams: boolean;
  /**
   * Every write must belong to an example team, cascades included, or the transaction is refused
   * (`LiveTeamWriteError`): the sandbox's removals, which never change a live team.
   */
  exampleTeamsOnly: boolean;
}

export const DEFAULT_CRM_OPTIONS: CrmOptions = {
  answeredCallFloorSeconds: 10,
  responseMessageWindow: 10_000,
  dropSupersededOfUnreadTeams: false,
  exampleTeamsOnly: false,
};

const LABELS: Partial<Record<EntityKind, string>> = { booking_service: 'bookable service' };

function inTeam<S>(entity: Entity<S>, team: string): Entity<S> {
  if (entity.team !== team)
    throw new WriteError(`${LABELS[entity.kind] ?? entity.kind} ${entity.id} belongs to another team than ${team}`);
  return entity;
}

/** What every operation works with: the transaction, the service clock and lookups that fail clearly. */
export class WriteContext {
  /** The transaction behind a read-through cache: operations read the same entities again and again. */
  readonly tx: CachedTx;
  private readonly teams = new Map<string, TeamState>();
  /** Each team's stages by id, rebuilt when a board was written since (`stage()` runs on every stage move). */
  private readonly stages = new Map<string, Map<string, { board: Entity<BoardState>; stage: StageState }>>();
  private stagesGeneration = -1;

  constructor(
    tx: WriteTx,
    readonly clock: Clock,
    readonly options: CrmOptions,
  ) {
    this.tx = tx instanceof CachedTx ? tx : new CachedTx(tx);
  }

  /** An entity that must exist, with a clear error otherwise. */
  async need<S>(kind: EntityKind, id: string): Promise<Entity<S>> {
    const entity = await this.tx.getEntity<S>(kind, id);
    if (!entity) throw new WriteError(`unknown ${LABELS[kind] ?? kind} ${id}`);
    return entity;
  }

  /** An entity that must exist and belong to `team`. */
  async needInTeam<S>(kind: EntityKind, id: string, team: string): Promise<Entity<S>> {
    return inTeam(await this.need<S>(kind, id), team);
  }

  /**
   * `need` without the copy, for a caller that only reads the entity and must not change it (existence,
   * team and state checks): most of what an event looks up, and a copy is the costlier part of a lookup.
   */
  async view<S>(kind: EntityKind, id: string): Promise<Entity<S>> {
    const entity = await this.tx.viewEntity<S>(kind, id);
    if (!entity) throw new WriteError(`unknown ${LABELS[kind] ?? kind} ${id}`);
    return entity;
  }

  /** `needInTeam` without the copy (see `view`). */
  async viewInTeam<S>(kind: EntityKind, id: string, team: string): Promise<Entity<S>> {
    return inTeam(await this.view<S>(kind, id), team);
  }

  async team(id: string): Promise<TeamState> {
    const cached = this.teams.get(id);
    if (cached) return cached;
    const team = (await this.need<TeamState>('team', id)).state;
    this.teams.set(id, team);
    return team;
  }

  forgetTeam(id: string): void {
    this.teams.delete(id);
  }

  async livemode(team: string): Promise<boolean> {
    return (await this.team(team)).livemode;
  }

  async lead(id: string): Promise<Entity<LeadState>> {
    return this.need<LeadState>('lead', id);
  }

  async putLead(lead: Entity<LeadState>): Promise<void> {
    await this.tx.putEntity(lead);
  }

  /** Assignees must be current members of the team; returned sorted and without repeats. */
  async members(team: string, ids: readonly string[]): Promise<string[]> {
    for (const id of ids) {
      const member = await this.viewInTeam<MemberState>('member', id, team);
      if (member.state.left) throw new WriteError(`member ${id} has left the team`);
    }
    return [...new Set(ids)].sort();
  }

  /** A stage of one of the team's boards, with its board. */
  async stage(team: string, stageId: string): Promise<{ board: Entity<BoardState>; stage: StageState }> {
    const found = (await this.teamStages(team)).get(stageId);
    if (found) return { board: found.board, stage: { ...found.stage } };
    throw new WriteError(`stage ${stageId} is on no board of team ${team}`);
  }

  /** The stage's name and board, or undefined when the stage is no longer on a board. */
  async findStage(team: string, stageId: string): Promise<{ board: string; name: string } | undefined> {
    const found = (await this.teamStages(team)).get(stageId);
    return found ? { board: found.board.id, name: found.stage.name } : undefined;
  }

  /** The first board (in insertion order) listing a stage wins, as a scan of the boards would find it. */
  private async teamStages(team: string) {
    const generation = this.tx.generation('board');
    if (generation !== this.stagesGeneration) {
      this.stages.clear();
      this.stagesGeneration = generation;
    }
    let index = this.stages.get(team);
    if (!index) {
      index = new Map();
      for (const board of await this.tx.findEntities<BoardState>('board', { team })) {
        for (const stage of board.state.stages) if (!index.has(stage.id)) index.set(stage.id, { board, stage });
      }
      this.stages.set(team, index);
    }
    return index;
  }
}
