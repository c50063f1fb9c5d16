// The feed cursor moved to the feed's own module (src/feed/feed-cursor.ts), which adds the feed epoch.
export { decodeFeedCursor, encodeFeedCursor, type FeedPosition } from '../feed/feed-cursor.js';
