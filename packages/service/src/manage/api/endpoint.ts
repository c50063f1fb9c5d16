import { type TObject, type TSchema, Type } from 'typebox';
import type { AnyAction } from '../action.js';

// A management API endpoint is one declaration: its method and path, the action it runs (which names the
// scope, the input and the answer), and which of the action's input fields come from the path. The rest of
// the input is the query string (GET) or the JSON body (POST). manage-surface.ts registers every declaration;
// openapi.ts describes them.

export interface ManageEndpoint {
  method: 'GET' | 'POST';
  /** Relative to /manage/v1, in Fastify's syntax (`/integrations/:id/roll`). */
  url: string;
  action: AnyAction;
  /** Path parameters, by the input field each fills (`{ id: 'id' }`). */
  path?: Readonly<Record<string, string>>;
  /** 201 for a create; 200 otherwise. */
  status?: 200 | 201;
}

export function manageEndpoint(spec: ManageEndpoint): ManageEndpoint {
  return spec;
}

/** The input fields the query string or body carries: the action's input without the path's. */
export function restOfInput(endpoint: ManageEndpoint): TObject {
  const input = endpoint.action.input as TObject;
  const fromPath = new Set(Object.values(endpoint.path ?? {}));
  const properties = Object.fromEntries(Object.entries(input.properties).filter(([name]) => !fromPath.has(name)));
  // The properties keep their optional marks, so the object requires what the action's input requires.
  return Type.Object(properties as Record<string, TSchema>, { additionalProperties: false });
}

/** The path parameters' schema: each the type of the input field it fills. */
export function pathSchema(endpoint: ManageEndpoint): TSchema | undefined {
  if (!endpoint.path) return undefined;
  const input = endpoint.action.input as TObject;
  return Type.Object(
    Object.fromEntries(
      Object.entries(endpoint.path).map(([param, field]) => [param, input.properties[field] as TSchema]),
    ),
  );
}

/** `/integrations/:id` as OpenAPI writes it: `/integrations/{id}`. */
export const openapiPath = (url: string): string => url.replace(/:([A-Za-z]+)/g, '{$1}');
