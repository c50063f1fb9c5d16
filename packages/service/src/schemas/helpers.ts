import { type Static, type TSchema, Type } from 'typebox';
import { ID_PREFIXES, type IdPrefixed } from './enums.js';

/**
 * A nullable field as `type: [T, "null"]` rather than `anyOf`: the serializer then keeps null
 * as null (never "" or 0) and validation is cheaper.
 */
export function Nullable<T extends TSchema>(schema: T) {
  // A nullable copy of a named schema is a different schema: drop `$id` so references to the
  // name (OpenAPI components) never lose the null.
  const { $id: _name, ...s } = schema as unknown as Record<string, unknown>;
  if (Array.isArray(s.enum)) {
    return Type.Unsafe<Static<T> | null>({ ...s, type: ['string', 'null'], enum: [...s.enum, null] });
  }
  if (typeof s.type !== 'string') throw new Error('Nullable needs a schema with one type');
  return Type.Unsafe<Static<T> | null>({ ...s, type: [s.type, 'null'] });
}

/** A string enum from an `as const` array. */
export function StringEnum<const T extends readonly string[]>(values: T, description?: string) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });
}

export function idPattern(kind: IdPrefixed): string {
  return `^${ID_PREFIXES[kind]}[0-9A-Za-z]+$`;
}

/** A public id: its type prefix followed by alphanumerics. */
export function Id(kind: IdPrefixed, description?: string) {
  return Type.String({ pattern: idPattern(kind), ...(description ? { description } : {}) });
}

/** ISO 8601 UTC with millisecond precision and a Z suffix. */
export const DateTime = Type.String({
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
});

/** A closed object: every listed field present, nothing else. */
export function Record_<P extends Record<string, TSchema>>(properties: P, options: Record<string, unknown> = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}
