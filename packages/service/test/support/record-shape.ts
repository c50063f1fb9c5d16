import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { RecordKind } from '../../src/schemas/enums.js';
import { RECORD_SCHEMAS } from '../../src/schemas/records.js';

// Stored records are served as written (no response serializer), so their shape is checked here: every
// field its kind's schema declares, of the declared type, nothing else, and in the schema's key order.

const checkers = new Map<TSchema, ReturnType<typeof Compile>>();
function checker(schema: TSchema): ReturnType<typeof Compile> {
  let compiled = checkers.get(schema);
  if (!compiled) {
    compiled = Compile(schema);
    checkers.set(schema, compiled);
  }
  return compiled;
}

/** The object schema `value` follows: the schema itself, or the variant of a union that accepts it. */
function variantOf(schema: TSchema, value: unknown): { properties?: Record<string, unknown> } | undefined {
  const s = schema as { properties?: Record<string, unknown>; anyOf?: TSchema[] };
  if (!s.anyOf) return s;
  return s.anyOf.find((variant) => checker(variant).Check(value));
}

/** Why a parsed record does not have its kind's exported shape, or undefined when it does. */
export function shapeProblem(kind: RecordKind, value: unknown): string | undefined {
  const schema = RECORD_SCHEMAS[kind];
  const compiled = checker(schema);
  if (!compiled.Check(value))
    return `does not match the ${kind} schema: ${JSON.stringify([...compiled.Errors(value)][0])}`;
  const properties = variantOf(schema, value)?.properties;
  if (!properties) return undefined;
  const keys = Object.keys(value as object).join(',');
  const expected = Object.keys(properties).join(',');
  return keys === expected ? undefined : `keys in the order ${keys}, the schema's is ${expected}`;
}
