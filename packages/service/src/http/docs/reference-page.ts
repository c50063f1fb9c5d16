import { ERROR_CATALOGUE, type ErrorCode } from '../../errors/catalogue.js';
import { escapeHtml, inlineMarkdown, page } from './html.js';

// The API reference page, rendered from the OpenAPI document the service serves (/docs/openapi.json):
// every endpoint with its parameters, request body and responses, every named schema, and the error codes,
// each linked to its entry on the error page.

/** The parts of JSON Schema and OpenAPI the renderer reads; anything else is ignored. */
interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  description?: string;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}

interface MediaContent {
  [type: string]: { schema?: Schema };
}

interface Response {
  description?: string;
  headers?: Record<string, { description?: string; schema?: Schema } & Schema>;
  content?: MediaContent;
}

interface Operation {
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: MediaContent };
  security?: Record<string, string[]>[];
  responses?: Record<string, Response>;
}

export interface OpenApiDocument {
  info?: { title?: string; version?: string; description?: string };
  servers?: { url: string; description?: string }[];
  paths?: Record<string, Record<string, Operation>>;
  components?: {
    schemas?: Record<string, Schema>;
    securitySchemes?: Record<string, { type?: string; scheme?: string; description?: string }>;
  };
  'x-release'?: string;
}

/** Past this depth a nested schema is named, not expanded (the records nest a few levels only). */
const MAX_DEPTH = 8;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The element id of an operation: `op-get-v1-leads-id`. */
export function operationId(method: string, path: string): string {
  return `op-${method}-${path
    .replace(/[{}]/g, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}`;
}

/** The element id of a named schema. */
export const schemaAnchor = (name: string): string => `schema-${name}`;

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1).replace(/#$/, '');
}

const json = (value: unknown) => `<code>${escapeHtml(JSON.stringify(value))}</code>`;

/** One line naming a schema's type: a link for a named schema, the members of an enum, `array of ...`. */
function typeLabel(schema: Schema): string {
  if (schema.$ref) {
    const name = refName(schema.$ref);
    return `<a href="#${schemaAnchor(name)}">${escapeHtml(name)}</a>`;
  }
  if (schema.const !== undefined) return `constant ${json(schema.const)}`;
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  const nullable = types.includes('null');
  const main = types.filter((t) => t !== 'null');
  let label: string;
  if (schema.enum) {
    const values = schema.enum.filter((v) => v !== null);
    label = values.length === 1 ? `constant ${json(values[0])}` : `one of ${values.map(json).join(', ')}`;
  } else if (main.includes('array') && schema.items) label = `array of ${typeLabel(schema.items)}`;
  else if (schema.anyOf || schema.oneOf) label = 'one of the forms below';
  else if (schema.allOf) label = 'all of the forms below';
  else label = main.length > 0 ? main.map((t) => `<code>${escapeHtml(t)}</code>`).join(' or ') : 'any value';
  return nullable || schema.enum?.includes(null) ? `${label} or <code>null</code>` : label;
}

/** Constraints and default in words. */
function constraints(schema: Schema): string {
  const parts: string[] = [];
  if (schema.format) parts.push(`format <code>${escapeHtml(schema.format)}</code>`);
  if (schema.pattern) parts.push(`pattern <code>${escapeHtml(schema.pattern)}</code>`);
  const range = (min: number | undefined, max: number | undefined, what: string) => {
    if (min !== undefined && max !== undefined) parts.push(`${what}${min} to ${max}`);
    else if (min !== undefined) parts.push(`${what}at least ${min}`);
    else if (max !== undefined) parts.push(`${what}at most ${max}`);
  };
  range(schema.minimum, schema.maximum, '');
  range(schema.minLength, schema.maxLength, 'length ');
  range(schema.minItems, schema.maxItems, 'items ');
  if (schema.default !== undefined) parts.push(`default ${json(schema.default)}`);
  return parts.join('; ');
}

function describe(schema: Schema): string {
  const words = [schema.description ? inlineMarkdown(schema.description) : '', constraints(schema)];
  return words.filter((w) => w !== '').join('<br>');
}

/** The object (or variants) inside a schema that deserves its own table, if any. */
function nested(schema: Schema): Schema | undefined {
  if (schema.$ref) return undefined;
  if (schema.properties || schema.anyOf || schema.oneOf || schema.allOf) return schema;
  if (schema.items && !schema.items.$ref) return nested(schema.items);
  return undefined;
}

/** A schema as HTML: a property table for an object, each form of a union, or a type line. */
export function renderSchema(schema: Schema, depth = 0): string {
  if (depth > MAX_DEPTH) return `<p>${typeLabel(schema)}</p>`;
  const variants = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (variants) {
    const how = schema.allOf ? 'All of' : 'One of';
    const forms = variants.map((v, i) => `<li>Form ${i + 1}: ${renderSchema(v, depth + 1)}</li>`).join('');
    return `<p>${how} ${variants.length} forms:</p><ol>${forms}</ol>`;
  }
  if (!schema.properties) {
    const inner = nested(schema);
    const line = `<p>${typeLabel(schema)}${describe(schema) ? ` — ${describe(schema)}` : ''}</p>`;
    return inner && inner !== schema ? `${line}${renderSchema(inner, depth + 1)}` : line;
  }
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(([name, property]) => {
    const inner = nested(property);
    const more = inner ? renderSchema(inner, depth + 1) : '';
    const flag = required.has(name) ? ' <span class="req" title="required">*</span>' : '';
    return `<tr><td><code>${escapeHtml(name)}</code>${flag}</td><td>${typeLabel(property)}</td><td>${describe(property)}${more}</td></tr>`;
  });
  const closed = schema.additionalProperties === false ? '<p class="muted">No other properties.</p>' : '';
  return `<table><thead><tr><th>Property</th><th>Type</th><th>Details</th></tr></thead><tbody>${rows.join('')}</tbody></table>${closed}`;
}

function renderParameters(parameters: Parameter[]): string {
  const rows = parameters.map((p) => {
    const schema = p.schema ?? {};
    const details = [p.description ? inlineMarkdown(p.description) : '', constraints(schema)].filter((x) => x !== '');
    const required = p.required ? '<span class="req">required</span>' : 'optional';
    return `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${typeLabel(schema)}</td><td>${required}</td><td>${details.join('<br>')}</td></tr>`;
  });
  return `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Details</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function renderContent(content: MediaContent | undefined): string {
  if (!content) return '';
  return Object.entries(content)
    .map(([type, media]) => `<p>Content <code>${escapeHtml(type)}</code>:</p>${renderSchema(media.schema ?? {})}`)
    .join('');
}

function renderResponses(responses: Record<string, Response>): string {
  return Object.entries(responses)
    .map(([status, response]) => {
      const problem = /^[45]/.test(status);
      const headers = response.headers
        ? `<table><thead><tr><th>Header</th><th>Details</th></tr></thead><tbody>${Object.entries(response.headers)
            .map(
              ([name, h]) =>
                `<tr><td><code>${escapeHtml(name)}</code></td><td>${inlineMarkdown(h.description ?? '')}</td></tr>`,
            )
            .join('')}</tbody></table>`
        : '';
      const body = problem
        ? `<p>A problem body (<a href="#${schemaAnchor('Problem')}">Problem</a>); its <code>code</code> is one of the <a href="#errors">error codes</a>.</p>`
        : renderContent(response.content);
      const description =
        response.description && response.description !== 'Default Response' ? response.description : '';
      return `<h5><span class="status">${escapeHtml(status)}</span> ${escapeHtml(description)}</h5>${headers}${body}`;
    })
    .join('');
}

function renderOperation(method: string, path: string, op: Operation): string {
  const id = operationId(method, path);
  const secured = (op.security?.length ?? 0) > 0;
  const parts = [
    `<section id="${id}"><h3><span class="method ${method}">${method}</span> <code>${escapeHtml(path)}</code></h3>`,
    op.summary ? `<p>${inlineMarkdown(op.summary)}</p>` : '',
    op.description ? `<p>${inlineMarkdown(op.description)}</p>` : '',
    `<p class="muted">${secured ? 'Needs a secret key: <code>Authorization: Bearer crmx_live_…</code>.' : 'No key needed.'}</p>`,
    op.parameters?.length ? renderParameters(op.parameters) : '',
    op.requestBody
      ? `<h4>Request body${op.requestBody.required ? ' (required)' : ''}</h4>${renderContent(op.requestBody.content)}`
      : '',
    op.responses ? `<h4>Responses</h4>${renderResponses(op.responses)}` : '',
    '</section>',
  ];
  return parts.join('\n');
}

export interface ReferenceOptions {
  /** The link of each error code's entry on the error page. */
  errorLink(code: ErrorCode): string;
}

/** The reference page of `document`. */
export function renderReference(document: OpenApiDocument, options: ReferenceOptions): string {
  const title = document.info?.title ?? 'API reference';
  const operations: [string, string, Operation][] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) operations.push([method, path, op]);
    }
  }
  const schemas = Object.entries(document.components?.schemas ?? {});
  const toc = operations
    .map(
      ([method, path, op]) =>
        `<li><a href="#${operationId(method, path)}"><span class="method ${method}">${method}</span> <code>${escapeHtml(path)}</code></a> ${escapeHtml(op.summary ?? '')}</li>`,
    )
    .join('');
  const schemaToc = schemas
    .map(([name]) => `<li><a href="#${schemaAnchor(name)}">${escapeHtml(name)}</a></li>`)
    .join('');
  const servers = (document.servers ?? [])
    .map((s) => `<code>${escapeHtml(s.url)}</code>${s.description ? ` (${inlineMarkdown(s.description)})` : ''}`)
    .join(', ');
  const security = Object.entries(document.components?.securitySchemes ?? {})
    .map(
      ([name, s]) =>
        `<li><code>${escapeHtml(name)}</code>: ${escapeHtml(s.type ?? '')} ${escapeHtml(s.scheme ?? '')} — ${inlineMarkdown(s.description ?? '')}</li>`,
    )
    .join('');
  const errors = (Object.keys(ERROR_CATALOGUE) as ErrorCode[])
    .map((code) => {
      const entry = ERROR_CATALOGUE[code];
      return `<tr><td>${entry.status}</td><td><a class="error-link" data-code="${code}" href="${escapeHtml(options.errorLink(code))}"><code>${code}</code></a></td><td>${escapeHtml(entry.title)}</td></tr>`;
    })
    .join('');
  const body = [
    `<h1>${escapeHtml(title)} <span class="muted">${escapeHtml(document.info?.version ?? '')}</span></h1>`,
    `<p>The reference of every endpoint, generated from <a href="openapi.json">openapi.json</a> (OpenAPI 3.1${document['x-release'] ? `, release <code>${escapeHtml(document['x-release'])}</code>` : ''}). Every error answer is a problem body; its <code>code</code> has an entry on the <a href="errors">error page</a>.</p>`,
    servers ? `<p>Server: ${servers}; every path starts with <code>/v1</code>.</p>` : '',
    security ? `<h2 id="authentication">Authentication</h2><ul>${security}</ul>` : '',
    `<nav><h2 id="endpoints">Endpoints</h2><ul>${toc}</ul><h2 id="schemas-list">Schemas</h2><ul>${schemaToc}</ul></nav>`,
    ...operations.map(([method, path, op]) => renderOperation(method, path, op)),
    `<section id="errors"><h2>Error codes</h2><table><thead><tr><th>Status</th><th>Code</th><th>Title</th></tr></thead><tbody>${errors}</tbody></table></section>`,
    '<h2 id="schemas">Schemas</h2>',
    ...schemas.map(
      ([name, schema]) =>
        `<section id="${schemaAnchor(name)}"><h3>${escapeHtml(name)}</h3>${schema.description ? `<p>${inlineMarkdown(schema.description)}</p>` : ''}${renderSchema(schema)}</section>`,
    ),
  ];
  return page(`${title} reference`, body.join('\n'));
}
