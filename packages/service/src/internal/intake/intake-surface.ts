import { type Static, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { ApiError } from '../../errors/catalogue.js';
import type { App } from '../../http/context.js';
import type { InternalContext, InternalSurface } from '../../http/internal-surface.js';
import { StoreUnavailableError } from '../../store/unavailable.js';
import {
  applyIntakeBatch,
  checkIntakeBatch,
  type IntakeBatchInput,
  IntakeInputError,
  SOURCE_PATTERN,
} from '../../write/intake/apply-intake.js';
import { bodyPath } from '../internal-app.js';

// The intake endpoint (issue 27; the protocol for producers is docs/intake.md): POST /intake/v1/batches
// applies one source's batch through the write side's one intake path and answers only after its
// transaction committed; GET /intake/v1/sources/{source} says where the service stands with a source.
// Both need a token with the `intake` scope. Checks run from the cheapest to the dearest: the body's bytes
// (Fastify, 413 body_too_large), JSON (400), the number of events (413 too_many_events), each event's bytes
// (413 event_too_large), the envelope (400 with the field's path, never its value). An event whose own
// fields are wrong is not a 400: it comes back `rejected` with `invalid_event` and the others go on.

/** The envelope of a batch; each event is an object holding its `seq` and the CRM event's own fields. */
const BatchBody = Type.Object(
  {
    source: Type.String({ pattern: SOURCE_PATTERN.source }),
    follows: Type.Optional(Type.Integer({ minimum: 0 })),
    events: Type.Array(Type.Object({ seq: Type.Integer({ minimum: 1 }) }, { additionalProperties: true }), {
      minItems: 1,
    }),
  },
  { additionalProperties: false },
);
type BatchBody = Static<typeof BatchBody>;
const checkBody = Compile(BatchBody);

/** The first envelope error's path (`events[3].seq`), never the value. */
function envelopeError(body: unknown): ApiError {
  const [first] = checkBody.Errors(body) as unknown as {
    instancePath: string;
    params: { requiredProperties?: string[]; additionalProperties?: string[] };
  }[];
  const property = first?.params.requiredProperties?.[0] ?? first?.params.additionalProperties?.[0];
  const param = first ? bodyPath(first.instancePath, property) : undefined;
  return new ApiError('invalid_request', param === undefined ? {} : { param });
}

/** The size checks of issue 27, in order: events per batch, then bytes per event (its JSON text). */
function checkSizes(body: unknown, limits: InternalContext['limits']): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('invalid_request');
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) return;
  if (events.length > limits.intakeMaxEvents) throw new ApiError('too_many_events', { param: 'events' });
  for (const [index, event] of events.entries()) {
    if (Buffer.byteLength(JSON.stringify(event) ?? '', 'utf8') > limits.intakeMaxEventBytes) {
      throw new ApiError('event_too_large', { param: `events[${index}]` });
    }
  }
}

/** The batch as the write side takes it: each event without its `seq`. */
function toBatch(body: BatchBody): IntakeBatchInput {
  return {
    source: body.source,
    ...(body.follows === undefined ? {} : { follows: body.follows }),
    events: body.events.map(({ seq, ...event }) => ({ seq, event })),
  };
}

/**
 * A database fault while applying: a write side that is behind (a lock wait or statement that ran out of
 * time, a locked SQLite file, no free connection) is `429 write_side_busy`; anything else that passes is
 * `503 service_unavailable`. Both say when to retry, and nothing was applied.
 */
function faultAnswer(error: unknown): unknown {
  if (!(error instanceof StoreUnavailableError)) return error;
  if (error.reason === 'busy') return new ApiError('write_side_busy', { retryAfter: error.retryAfterSeconds });
  return new ApiError('service_unavailable', { retryAfter: error.retryAfterSeconds });
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const intakeSurface: InternalSurface = {
  prefix: '/intake/v1',
  register(app: App, context: InternalContext) {
    const { store, clock, limits } = context;
    app.post(
      '/batches',
      { config: { operatorScope: 'intake' }, bodyLimit: limits.intakeMaxBodyBytes },
      async (request, reply) => {
        const body = request.body;
        checkSizes(body, limits);
        if (!checkBody.Check(body)) throw envelopeError(body);
        const batch = toBatch(body);
        const wrong = checkIntakeBatch(batch);
        if (wrong) throw new ApiError('invalid_request', { param: wrong.param });
        let result: Awaited<ReturnType<typeof applyIntakeBatch>>;
        try {
          result = await applyIntakeBatch(store, clock, batch);
        } catch (error) {
          if (error instanceof IntakeInputError) throw new ApiError('invalid_request', { param: error.param });
          throw faultAnswer(error);
        }
        if (!result.ok) {
          throw new ApiError('sequence_gap', { members: { source: result.source, last_seq: result.last_seq } });
        }
        const { source, last_seq, results } = result;
        return reply
          .header('cache-control', 'no-store')
          .type('application/json; charset=utf-8')
          .send(JSON.stringify({ source, last_seq, results }));
      },
    );

    app.get<{ Params: { source: string } }>(
      '/sources/:source',
      { config: { operatorScope: 'intake' } },
      async (request, reply) => {
        const { source } = request.params;
        if (!SOURCE_PATTERN.test(source)) throw new ApiError('invalid_request', { param: 'source' });
        let row: Awaited<ReturnType<typeof store.intakeSources>>[number] | undefined;
        try {
          row = (await store.intakeSources()).find((r) => r.source === source);
        } catch (error) {
          throw faultAnswer(error);
        }
        // A source never seen has applied nothing: its last seq is 0.
        const answer = {
          source,
          last_seq: row?.lastSeq ?? 0,
          last_event_at: iso(row?.lastEventAt ?? null),
          applied: row?.applied ?? 0,
          duplicates: row?.duplicates ?? 0,
          rejected: row?.rejected ?? 0,
          quarantined: row?.quarantined ?? 0,
          updated_at: iso(row?.updatedAt ?? null),
        };
        return reply
          .header('cache-control', 'no-store')
          .type('application/json; charset=utf-8')
          .send(JSON.stringify(answer));
      },
    );
  },
};
