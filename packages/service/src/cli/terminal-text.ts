// What the commands print reaches the operator's terminal, and much of it comes from the CRM or from input
// files: an organization's name, a team id, an event's field in an ingest report. A control character in
// it could clear the screen, set the window title, or hide and reorder text, so the human-readable outputs
// show each one escaped (`\x1b`, `\u202e`). JSON stays JSON that parses to the same values: the characters
// JSON.stringify leaves raw (DEL, the C1 controls, the bidirectional controls) are written as `\u` escapes.

/**
 * C0 controls, DEL and C1 controls (`\p{Cc}`), the line and paragraph separators, and the bidirectional
 * embeddings, overrides and isolates (which reorder what a terminal shows).
 */
const CONTROLS = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, '0');

/** `\x1b` for a character up to U+00FF, `\u202e` above. */
function escaped(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
}

/** One value (a name, an id, a message, a table cell) as printed: every control character escaped, line breaks too. */
export function printable(value: string): string {
  return value.replace(CONTROLS, escaped);
}

/** A whole human-readable output, whose own line breaks stay: every other control character escaped. */
export function terminalText(text: string): string {
  return text.replace(CONTROLS, (char) => (char === '\n' ? char : escaped(char)));
}

/** `JSON.stringify(value, null, space)` with every control character written as a `\u` escape. */
export function jsonText(value: unknown, space?: number): string {
  // Outside strings JSON holds no such character (the indentation is spaces and line feeds), and
  // JSON.stringify already escapes the C0 controls inside them.
  return JSON.stringify(value, null, space).replace(CONTROLS, (char) =>
    char.charCodeAt(0) < 0x20 ? char : `\\u${hex(char.charCodeAt(0), 4)}`,
  );
}
