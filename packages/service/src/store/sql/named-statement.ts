import type { Backend } from './dialect.js';

// A statement that takes many values, or one value in several places, names them (`:team`) rather than
// counting `?`s by hand against an array in the same order. The names are read once, when the backend's
// statements load: the text becomes the backend's positional form (`?` for SQLite, `$1, $2...` for
// PostgreSQL), byte for byte what `?`s would give, so it is still prepared once per connection. A call
// only picks its values out of an object, in the order the names stand.

/** `:` then a name; not the second colon of a PostgreSQL cast (`::json`). */
const NAME = /(?<![:\w]):([a-z][A-Za-z0-9]*)/g;

/** A statement text with named placeholders, in one backend's positional form. */
export class NamedStatement<P extends object> {
  /** The text as the backend prepares it. */
  readonly text: string;
  /** The names in placeholder order (a name used twice stands twice). */
  readonly #names: readonly (keyof P & string)[];

  constructor(named: string, backend: Backend) {
    if (named.includes('?')) throw new Error(`a statement with named placeholders also holds a ?: ${named}`);
    const names: (keyof P & string)[] = [];
    this.text = named.replace(NAME, (_, name: string) => {
      names.push(name as keyof P & string);
      return backend === 'postgres' ? `$${names.length}` : '?';
    });
    this.#names = names;
  }

  /** The values to bind, from `params` in placeholder order; a name `params` lacks is a bug, refused. */
  values(params: P): unknown[] {
    return this.#names.map((name) => {
      const value = params[name];
      if (value === undefined) throw new Error(`statement parameter :${name} has no value`);
      return value;
    });
  }
}
