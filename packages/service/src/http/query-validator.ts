import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';
import type { FastifySchemaValidationError } from 'fastify';

// Ajv coerces a query value to an integer with `+value`, so "Infinity", "-1e309" or 400 digits become an
// infinite number, and Ajv skips `minimum`/`maximum` for a number that is not finite: `limit=Infinity`
// reached the handlers. Every integer query parameter is therefore first required to be written in plain
// decimal ("25"; never "+25", "025", "2.5e1", "0x19", " 25") and to be a safe integer; Ajv then checks
// its range as before. Other parts (path, headers) and the search body are untouched.

const DECIMAL = /^-?(?:0|[1-9][0-9]*)$/;

interface RouteSchema {
  schema: unknown;
  httpPart?: string;
}
type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };
type Factory = (externalSchemas: unknown, options: unknown) => (route: RouteSchema) => Validate;

/**
 * Fastify's own Ajv validator factory, with integer query parameters checked for their spelling first.
 * Each route part's validator is compiled on its first request, not when the app is ready: Ajv's instance
 * and every route's compiled code were about a fifth of a server's start-up (docs/performance.md).
 */
export function queryAwareValidatorFactory(): ValidatorFactory {
  // The package's types describe the compiler as taking a bare schema; Fastify calls it with the route part.
  const build = AjvCompiler() as unknown as Factory;
  const factory: Factory = (externalSchemas, options) => {
    let compile: ReturnType<Factory> | undefined;
    return (route) =>
      onFirstUse(() => {
        compile ??= build(externalSchemas, options);
        const validate = compile(route);
        if (route.httpPart !== 'querystring') return validate;
        const integers = integerProperties(route.schema);
        return integers.length === 0 ? validate : decimalIntegersFirst(validate, integers);
      });
  };
  return factory as unknown as ValidatorFactory;
}

/** A validator that builds the real one on its first call, and passes each call and its errors through. */
function onFirstUse(make: () => Validate): Validate {
  let validate: Validate | undefined;
  const check: Validate = (data) => {
    validate ??= make();
    const valid = validate(data);
    check.errors = validate.errors ?? null;
    return valid;
  };
  return check;
}

/** True when `value` is an integer written the plain decimal way and within the safe range. */
function isDecimalInteger(value: string): boolean {
  return DECIMAL.test(value) && Number.isSafeInteger(Number(value));
}

function integerProperties(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
}

function decimalIntegersFirst(validate: Validate, names: readonly string[]): Validate {
  const check: Validate = (data) => {
    const query = data as Record<string, unknown>;
    for (const name of names) {
      const value = query[name];
      // A repeated parameter arrives as an array, which Ajv refuses by type.
      if (typeof value === 'string' && !isDecimalInteger(value)) {
        check.errors = [notAnInteger(name)];
        return false;
      }
    }
    const valid = validate(data);
    check.errors = validate.errors ?? null;
    return valid;
  };
  return check;
}

function notAnInteger(name: string): FastifySchemaValidationError {
  return {
    keyword: 'type',
    instancePath: `/${name}`,
    schemaPath: `#/properties/${name}/type`,
    params: { type: 'integer' },
    message: 'must be integer',
  };
}
