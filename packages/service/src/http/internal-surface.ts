import type { Logger } from 'pino';
import type { OperatorTokenAuth } from '../access/operator-tokens.js';
import type { StoreAccessControl } from '../access/store-access-control.js';
import type { Clock } from '../clock.js';
import type { Limits } from '../limits.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { UsageRecorder } from '../usage/recorder.js';
import type { App } from './context.js';

// The contract between the internal listener (internal/) and the surfaces it serves: intake, the management
// API and the console. It sits here, below both, so a surface's folder never imports internal/.
//
// A surface registers its routes under its prefix. Every route declares the operator token scope it needs in
// `config.operatorScope` (or `none` when the surface signs requests in by itself, like the console's session);
// the listener's auth hook checks the Bearer token before the body is read and sets `request.operator`.

/** Where each surface lives on the internal listener. */
export const INTERNAL_PREFIXES = ['/intake/v1', '/manage/v1', '/console'] as const;
export type InternalPrefix = (typeof INTERNAL_PREFIXES)[number];

/** What a surface gets from the listener. */
export interface InternalContext {
  store: Store;
  clock: Clock;
  limits: Limits;
  /** The process's logger, or undefined when the app logs nothing (tests). */
  logger: Logger | undefined;
  metrics: Metrics | undefined;
  /** The token checks, for a surface that signs in with a token outside the hook (the console). */
  tokens: OperatorTokenAuth;
  /** Where problem bodies link (`--docs-url`), if the operator set it. */
  docsUrl: string | undefined;
  /** The API's access control (its counters and lockouts), when the listener runs beside the API. */
  access: StoreAccessControl | undefined;
  /** The API's recorder of last use, usage and the request log, when recording is on. */
  usage: UsageRecorder | undefined;
}

export interface InternalSurface {
  prefix: InternalPrefix;
  /**
   * Adds the surface's routes to `app`, an encapsulated Fastify context already mounted at `prefix` (route
   * paths are relative to it). Hooks and content type parsers added here stay inside the surface.
   */
  register(app: App, context: InternalContext): Promise<void> | void;
}
