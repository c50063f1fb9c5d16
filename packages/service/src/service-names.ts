// The names the service answers with, the same in every process: its release, where the operator
// listener serves the reference, the problem type tag and the authentication realm.

/** The release this build answers with in `Service-Release`. */
export const RELEASE = 'crm-export@0.1.0';

/** Where the operator listener serves the API reference and the error page (never the public listener). */
export const DOCS_PATH = '/docs';

/**
 * The `type` and `doc_url` of problem bodies without `--docs-url`: `<this>#<code>`, a name rather than a
 * location (a `tag:` URI, RFC 4151), the same in every process. No address the service knows resolves for
 * every client (the operator listener is internal, the API's port serves no pages), and a link must never
 * hand a client an internal address (docs/reference.md).
 */
export const ERROR_TYPE_TAG = 'tag:crm-export,2026:errors';

/** The realm of `WWW-Authenticate: Bearer realm=...`. */
export const API_REALM = 'crm-export';
