/** A setting refused: the message names the flag or variable, the allowed values and what was given. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
