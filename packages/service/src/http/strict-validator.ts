import type { FastifySchema, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

// The search body is JSON with types of its own: coercing `{"email": 42}` into "42" (as the shared
// validator does for query strings) would accept a body the spec calls "not the expected JSON".
// This compiler checks with TypeBox and no coercion; Fastify reads the errors like Ajv's.

type ValidatorFn = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };

export function strictValidatorCompiler({ schema }: { schema: FastifySchema }): ValidatorFn {
  const validator = Compile(schema as TSchema);
  const check: ValidatorFn = (data) => {
    if (validator.Check(data)) return true;
    // TypeBox reports errors in Ajv's shape (keyword, instancePath, params).
    check.errors = validator.Errors(data) as unknown as FastifySchemaValidationError[];
    return false;
  };
  return check;
}
