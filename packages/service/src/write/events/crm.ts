import type { Clock } from '../../clock.js';
import type { Store } from '../../store/store.js';
import type { TeamState } from '../types.js';
import { batchKeys } from './batch-keys.js';
import { createBooking, deleteBooking, updateBooking } from './booking-operations.js';
import { CachedTx } from './cached-tx.js';
import { recordCall, removeCallEvent, updateCall } from './call-operations.js';
import { type CrmOptions, DEFAULT_CRM_OPTIONS, WriteContext } from './context.js';
import {
  eraseMessage,
  messageReceipt,
  recordMessage,
  removeConversationEvent,
  startConversation,
  updateConversation,
} from './conversation-operations.js';
import type { CrmEvent, EventOf, EventType } from './events.js';
import { ExampleTeamsOnlyTx } from './example-teams-only.js';
import { merge, submissionDeleted, submissionReceived, transfer } from './lead-family.js';
import {
  archive,
  convert,
  createLead,
  moveStage,
  revive,
  setAssignees,
  setContactPermissions,
  setStatus,
  unarchive,
  updateInternal,
  updateLead,
} from './lead-operations.js';
import { removeLead } from './lead-removal.js';
import { type ParseResult, parseEvent } from './parse-event.js';
import {
  boardArchived,
  memberJoined,
  memberLeft,
  serviceCreated,
  serviceDeleted,
  upsertBoard,
  upsertOrganization,
  upsertTeam,
} from './team-operations.js';
import { WriteError } from './write-error.js';

/** How `applyBatch` takes its events. */
export interface ApplyOptions {
  /**
   * The events are in stored form already: each passed `checkEvent` and was made by
   * `normaliseEvent(stripContent(event))` (ingest does so as it reads each line), or is built in that
   * form by code whose tests check it (the demo's generator), so they are neither checked nor copied
   * again. Anything else must leave this off.
   */
  checked?: boolean;
}

type Handler<K extends EventType> = (ctx: WriteContext, event: EventOf<K>, at: string) => Promise<void>;

const HANDLERS: { [K in EventType]: Handler<K> } = {
  'organization.upsert': upsertOrganization,
  'team.upsert': upsertTeam,
  'member.joined': memberJoined,
  'member.left': memberLeft,
  'service.created': serviceCreated,
  'service.deleted': serviceDeleted,
  'board.upsert': upsertBoard,
  'board.archived': boardArchived,
  'lead.created': createLead,
  'lead.updated': updateLead,
  'lead.internal_updated': updateInternal,
  'lead.contact_permissions': setContactPermissions,
  'lead.status_set': setStatus,
  'lead.archived': archive,
  'lead.unarchived': unarchive,
  'lead.revived': revive,
  'lead.stage_moved': moveStage,
  'lead.assignees_set': setAssignees,
  'lead.converted': convert,
  'lead.merged': merge,
  'lead.transferred': transfer,
  'lead.erased': async (ctx, e) => removeLead(ctx, await ctx.lead(e.lead), 'erased'),
  'lead.deleted': async (ctx, e) => removeLead(ctx, await ctx.lead(e.lead), 'deleted'),
  'submission.received': submissionReceived,
  'submission.deleted': submissionDeleted,
  'call.recorded': recordCall,
  'call.updated': updateCall,
  'call.erased': removeCallEvent,
  'call.deleted': removeCallEvent,
  'conversation.started': startConversation,
  'conversation.updated': updateConversation,
  'conversation.erased': removeConversationEvent,
  'conversation.deleted': removeConversationEvent,
  'message.recorded': recordMessage,
  'message.receipt': messageReceipt,
  'message.erased': eraseMessage,
  'booking.created': createBooking,
  'booking.updated': updateBooking,
  'booking.deleted': deleteBooking,
};

/**
 * Applies one event in stored form (`parseEvent`) through its handler. For callers that run their own
 * transaction around it (the intake, write/intake/): `Crm` does the same for each event of a batch.
 */
export async function applyEvent(ctx: WriteContext, event: CrmEvent): Promise<void> {
  // In stored form `at` is what `Date#toISOString` gives already (`normaliseEvent`).
  await (HANDLERS[event.type] as Handler<EventType>)(ctx, event, event.at);
}

/**
 * The CRM operations that produce the exported data. Every operation is an event; each is validated,
 * stripped of content and applied in one transaction that updates internal state, republishes every
 * record it touches (a new version only when an exported field changed) and appends the feed entries.
 */
export class Crm {
  private readonly options: CrmOptions;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    options: Partial<CrmOptions> = {},
  ) {
    this.options = { ...DEFAULT_CRM_OPTIONS, ...options };
  }

  /** Applies one event; a `WriteError` means nothing was applied. */
  async apply(event: CrmEvent): Promise<void> {
    await this.run([parseEvent(event)], { indexed: false });
  }

  /** Applies every event in one transaction: all or nothing; a `WriteError` names the failing event's index. */
  async applyBatch(events: readonly CrmEvent[], options: ApplyOptions = {}): Promise<void> {
    const parsed = options.checked ? events.map((event) => ({ ok: true as const, event })) : events.map(parseEvent);
    await this.run(parsed, { indexed: true });
  }

  /** `indexed`: a refusal names the failing event's index in the batch. */
  private async run(parsed: readonly ParseResult[], { indexed }: { indexed: boolean }): Promise<void> {
    await this.store.write(async (tx) => {
      // Rows are written once per transaction (see CachedTx); `flush` writes them before the commit.
      const cache = new CachedTx(this.options.exampleTeamsOnly ? new ExampleTeamsOnlyTx(tx) : tx, {
        deferWrites: true,
      });
      const ctx = new WriteContext(cache, this.clock, this.options);
      // Read ahead what the events name (an event that does not parse is refused below, in its turn).
      await cache.prefetch(() => batchKeys(parsed.flatMap((p) => (p.ok ? [p.event] : []))));
      for (const [index, result] of parsed.entries()) {
        try {
          if (!result.ok) throw new WriteError(result.message);
          await applyEvent(ctx, result.event);
        } catch (error) {
          if (!(error instanceof WriteError)) throw error;
          throw indexed ? new WriteError(error.message, index) : error;
        }
      }
      if (this.options.dropSupersededOfUnreadTeams) {
        await cache.dropSupersededFeed(async (team) => {
          const state = (await cache.getEntity<TeamState>('team', team))?.state;
          return state !== undefined && state.capturedAt === null && (state.captureRequestedAt ?? null) === null;
        });
      }
      await cache.flush();
    });
  }
}
