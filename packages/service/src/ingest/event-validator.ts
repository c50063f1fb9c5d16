import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

export type Validation<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

type Checker = { Check(value: unknown): boolean; Errors(value: unknown): ValidationIssue[] };

/**
 * Validates values against a TypeBox union of objects told apart by a constant discriminator
 * (`type`). Errors of a union list every variant's complaints; checking the one variant the
 * discriminator names gives the single error a person can act on.
 */
export function createUnionValidator<T>(union: TSchema, discriminator = 'type'): (value: unknown) => Validation<T> {
  const whole = Compile(union) as unknown as Checker;
  const variants = new Map<string, TSchema>();
  for (const variant of ((union as { anyOf?: TSchema[] }).anyOf ?? [union]) as TSchema[]) {
    const tag = (variant as { properties?: Record<string, { const?: unknown }> }).properties?.[discriminator]?.const;
    if (typeof tag === 'string') variants.set(tag, variant);
  }
  const compiled = new Map<string, Checker>();
  const checkerFor = (tag: string): Checker | undefined => {
    const variant = variants.get(tag);
    if (variant === undefined) return undefined;
    let checker = compiled.get(tag);
    if (checker === undefined) {
      checker = Compile(variant) as unknown as Checker;
      compiled.set(tag, checker);
    }
    return checker;
  };

  return (value: unknown): Validation<T> => {
    if (whole.Check(value)) return { ok: true, value: value as T };
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, field: '(line)', message: 'must be a JSON object holding one event' };
    }
    const tag = (value as Record<string, unknown>)[discriminator];
    if (typeof tag !== 'string') {
      return { ok: false, field: discriminator, message: 'must be a string naming the event type' };
    }
    const checker = checkerFor(tag);
    if (checker === undefined) return { ok: false, field: discriminator, message: 'is not a known event type' };
    const issue = mostSpecific(checker.Errors(value));
    if (issue === undefined) return { ok: false, field: '(line)', message: 'does not match the event schema' };
    return describe(issue);
  };
}

const COMBINATORS = new Set(['anyOf', 'oneOf', 'allOf', 'if', 'boolean']);

/** The first error that names a concrete rule (a nullable field's `anyOf` says less than its `type`). */
function mostSpecific(issues: ValidationIssue[]): ValidationIssue | undefined {
  return issues.find((issue) => !COMBINATORS.has(issue.keyword)) ?? issues[0];
}

function describe(issue: ValidationIssue): { ok: false; field: string; message: string } {
  const path = issue.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (issue.keyword === 'required') {
    const missing = (issue.params.requiredProperties as string[] | undefined) ?? [];
    const field = [...path, missing[0] ?? '?'].join('.');
    return { ok: false, field, message: 'is required' };
  }
  if (issue.keyword === 'additionalProperties') {
    const extra = (issue.params.additionalProperties as string[] | undefined) ?? [];
    return { ok: false, field: [...path, extra[0] ?? '?'].join('.'), message: 'is not a field of this event' };
  }
  // The message states the rule (type, pattern, range), never the value the line holds.
  return { ok: false, field: path.length > 0 ? path.join('.') : '(event)', message: issue.message };
}
