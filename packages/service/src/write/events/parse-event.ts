import { Compile } from 'typebox/compile';
import { DATE_TIME_PATTERN, normaliseDateTime } from './date-time.js';
import { CONTENT_FIELDS } from './event-fields.js';
import { describeIssue, type EventIssue, type ValidationIssue } from './event-issue.js';
import { type CrmEvent, EVENT_SCHEMAS } from './events.js';

// Checking and parsing one event against the schema its `type` names, and the stored form it takes.

/** Each event type's compiled check, compiled on first use: compiling them all cost a server's start-up 70 ms. */
const validators = new Map<string, ReturnType<typeof Compile>>();
function validatorOf(type: string): ReturnType<typeof Compile> | undefined {
  if (!Object.hasOwn(EVENT_SCHEMAS, type)) return undefined;
  let validator = validators.get(type);
  if (!validator) {
    validator = Compile(EVENT_SCHEMAS[type as keyof typeof EVENT_SCHEMAS]);
    validators.set(type, validator);
  }
  return validator;
}

export type ParseResult = { ok: true; event: CrmEvent } | { ok: false; message: string };
export type EventCheck = { ok: true; event: CrmEvent } | ({ ok: false } & EventIssue);

type SchemaNode = { type?: unknown; pattern?: string; enum?: unknown; properties?: Record<string, unknown> };

/** Paths of the fields of a schema that `is` picks (through objects; no such field sits in an array). */
function fieldPaths(schema: unknown, is: (s: SchemaNode) => boolean, path: string[] = []): string[][] {
  const s = schema as SchemaNode;
  if (is(s)) return [path];
  return Object.entries(s.properties ?? {}).flatMap(([key, value]) => fieldPaths(value, is, [...path, key]));
}
const pathsOf = (is: (s: SchemaNode) => boolean) =>
  new Map(Object.entries(EVENT_SCHEMAS).map(([type, schema]) => [type, fieldPaths(schema, is)]));
const TIME_PATHS = pathsOf((s) => s.pattern === DATE_TIME_PATTERN);
/** Optional free strings (nullable, no pattern, no enum): blank means null. */
const NULLABLE_TEXT_PATHS = pathsOf(
  (s) => Array.isArray(s.type) && s.type.includes('string') && s.type.includes('null') && !s.pattern && !s.enum,
);

/** Calls `visit` with the holder and key of each string the paths name in the event, and its path. */
function eachString(
  paths: Map<string, string[][]>,
  type: string,
  event: object,
  visit: (holder: Record<string, unknown>, key: string, path: string[]) => void,
): void {
  for (const path of paths.get(type) ?? []) {
    let holder: unknown = event;
    for (const key of path.slice(0, -1)) holder = (holder as Record<string, unknown> | null)?.[key];
    const key = path[path.length - 1]!;
    if (typeof holder === 'object' && holder !== null && typeof (holder as Record<string, unknown>)[key] === 'string')
      visit(holder as Record<string, unknown>, key, path);
  }
}

/** The first date-time the pattern lets through that still names no instant (a 30 February, year 10000 in UTC). */
function timeIssue(type: string, event: object): EventIssue | undefined {
  let issue: EventIssue | undefined;
  eachString(TIME_PATHS, type, event, (holder, key, path) => {
    if (issue === undefined && normaliseDateTime(holder[key] as string) === undefined) {
      issue = {
        field: path.join('.'),
        message: 'is not a date-time that exists (a day the month lacks, or a UTC year outside 0000-9999)',
        unknownField: false,
      };
    }
  });
  return issue;
}

/**
 * Checks one event against the schema its `type` names (content fields still in it). Checking the one
 * variant `type` names, rather than the whole union, gives the single error a person can act on.
 */
export function checkEvent(value: unknown): EventCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, field: '(line)', message: 'must be a JSON object holding one event', unknownField: false };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') {
    return { ok: false, field: 'type', message: 'must be a string naming the event type', unknownField: false };
  }
  const validator = validatorOf(type);
  if (!validator) return { ok: false, field: 'type', message: 'is not a known event type', unknownField: false };
  if (!validator.Check(value))
    return { ok: false, ...describeIssue([...validator.Errors(value)] as ValidationIssue[]) };
  const issue = timeIssue(type, value);
  if (issue) return { ok: false, ...issue };
  return { ok: true, event: value as CrmEvent };
}

/**
 * Validates one event against the schema of its `type` and returns it without its content fields, in
 * stored form (`normaliseEvent`).
 * The message names the field at fault, never its value.
 */
export function parseEvent(value: unknown): ParseResult {
  const checked = checkEvent(value);
  if (checked.ok) return { ok: true, event: normaliseEvent(stripContent(checked.event)) };
  const type = (value as { type?: unknown } | null)?.type;
  const prefix = typeof type === 'string' && Object.hasOwn(EVENT_SCHEMAS, type) ? `${type}: ` : '';
  const message = checked.unknownField
    ? `${prefix}unknown field "${checked.field}"`
    : `${prefix}field "${checked.field}" ${checked.message}`;
  return { ok: false, message };
}

/** A copy of the event without content fields: the only form the write side works with. */
export function stripContent<E extends CrmEvent>(event: E): E {
  const copy: Record<string, unknown> = { ...event };
  for (const field of CONTENT_FIELDS) delete copy[field];
  return copy as E;
}

/**
 * A checked event in the form the write side stores: every date-time in UTC with milliseconds, and every
 * optional text field that is empty or whitespace only as null (the API never exports an empty string).
 * Nested objects are copied.
 */
export function normaliseEvent<E extends CrmEvent>(event: E): E {
  const copy = structuredClone(event);
  eachString(TIME_PATHS, copy.type, copy, (holder, key) => {
    holder[key] = normaliseDateTime(holder[key] as string);
  });
  eachString(NULLABLE_TEXT_PATHS, copy.type, copy, (holder, key) => {
    if ((holder[key] as string).trim() === '') holder[key] = null;
  });
  return copy;
}
