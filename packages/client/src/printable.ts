// Text from the service (team ids, kinds, error messages) and from the command line reaches the operator's
// terminal: its control characters are shown escaped (`\x1b`, `\u202e`), so it cannot clear the screen, set
// the window title or reorder what the terminal shows.

/** C0, DEL and C1 controls, the line and paragraph separators, the bidirectional controls. */
const CONTROLS = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** `value` with every control character escaped, line breaks included. */
export function printable(value: string): string {
  return value.replace(CONTROLS, (char) => {
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
