// The stories a demo lead can have, apart from the code that plays them (demo-lead.ts) so the pieces
// that play a part of a story (demo-interactions.ts) name them without importing their caller.

/** Where a lead's story ends. The first leads of a team walk this list in order, so every one shows. */
export const STORIES = [
  'new',
  'contacted',
  'qualified',
  'negotiating',
  'converted',
  'converted_cleared',
  'lost',
  'unreachable',
  'archived',
  'unarchived',
  'revived',
  'merged',
  'transferred',
  'client',
  'onboarding',
  'erased',
  'deleted',
] as const;
export type Story = (typeof STORIES)[number];
/** How often each story is picked once every one has shown, in the order of `STORIES`. */
export const STORY_WEIGHTS = [14, 12, 10, 7, 8, 4, 8, 5, 8, 3, 3, 3, 2, 9, 3, 0.5, 0.5];
