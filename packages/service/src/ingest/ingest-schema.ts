import { CrmEvent } from '../write/events/events.js';

/** Where the generated JSON Schema lives, relative to the repository root. */
export const INGEST_SCHEMA_PATH = 'docs/ingest.schema.json';

/**
 * The JSON Schema (draft 2020-12) of one line of an ingest file, generated from the TypeBox union
 * the write side validates with, so the document cannot drift from what `crm-export ingest` accepts.
 */
export function ingestSchemaDocument(): Record<string, unknown> {
  // TypeBox schemas are plain JSON objects; a round trip drops its non-enumerable bookkeeping.
  const { $id: _internalId, ...schema } = JSON.parse(JSON.stringify(CrmEvent)) as Record<string, unknown>;
  return {
    $comment:
      'Generated from packages/service/src/write/events/events.ts by packages/service/scripts/generate-ingest-schema.ts; do not edit.',
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://docs.crm-export.dev/ingest.schema.json',
    title: 'crm-export ingest event',
    description: 'One line of an NDJSON file read by `crm-export ingest`: one CRM event, told apart by `type`.',
    ...schema,
  };
}
