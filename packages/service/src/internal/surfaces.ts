import { consoleSurface } from '../console/console-surface.js';
import type { InternalSurface } from '../http/internal-surface.js';
import { manageSurface } from '../manage/api/manage-surface.js';
import { intakeSurface } from './intake/intake-surface.js';

// The surfaces every internal listener serves, in this order. A folder that adds one (intake, management API,
// console) appends it here; the listener registers each under its prefix (http/internal-surface.ts).

export function internalSurfaces(): InternalSurface[] {
  return [intakeSurface, manageSurface, consoleSurface];
}
