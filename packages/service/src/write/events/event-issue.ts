// Turns a schema's validation errors into the one complaint a person can act on: the field at fault
// as a dotted path and the rule it breaks, never the value it holds.

import { DATE_TIME_PATTERN, DATE_TIME_RULE } from './date-time.js';

/** Pattern of a string that must hold a value: at least one character other than whitespace. */
export const NOT_BLANK_PATTERN = '\\S';

export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

export interface EventIssue {
  /** Dotted path of the field at fault; `(line)` or `(event)` when it is the whole value. */
  field: string;
  /** The rule it breaks (type, pattern, range, required...). */
  message: string;
  /** True when the field is not one of the event's fields at all. */
  unknownField: boolean;
}

const COMBINATORS = new Set(['anyOf', 'oneOf', 'allOf', 'if', 'boolean']);

/** The first error that names a concrete rule (a nullable field's `anyOf` says less than its `type`). */
function mostSpecific(issues: readonly ValidationIssue[]): ValidationIssue | undefined {
  return issues.find((issue) => !COMBINATORS.has(issue.keyword)) ?? issues[0];
}

export function describeIssue(issues: readonly ValidationIssue[]): EventIssue {
  const issue = mostSpecific(issues);
  if (issue === undefined) return { field: '(line)', message: 'does not match the event schema', unknownField: false };
  const path = issue.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (issue.keyword === 'required') {
    const missing = (issue.params.requiredProperties as string[] | undefined) ?? [];
    return { field: [...path, missing[0] ?? '?'].join('.'), message: 'is required', unknownField: false };
  }
  if (issue.keyword === 'additionalProperties') {
    const extra = (issue.params.additionalProperties as string[] | undefined) ?? [];
    return { field: [...path, extra[0] ?? '?'].join('.'), message: 'is not a field of this event', unknownField: true };
  }
  // The date-time pattern is long and says less than the rule in words.
  const pattern = issue.keyword === 'pattern' ? issue.params.pattern : undefined;
  const message =
    pattern === DATE_TIME_PATTERN
      ? DATE_TIME_RULE
      : pattern === NOT_BLANK_PATTERN
        ? 'must not be empty or only whitespace'
        : issue.message;
  return { field: path.length > 0 ? path.join('.') : '(event)', message, unknownField: false };
}
