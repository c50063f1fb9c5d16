/** A CRM operation that cannot be applied (unknown record, wrong team, bad transition...). Nothing was applied. */
export class WriteError extends Error {
  override name = 'WriteError';
  /** Position of the failing event in a batch, when the event came in one. */
  readonly index: number | undefined;

  constructor(message: string, index?: number) {
    super(index === undefined ? message : `event ${index}: ${message}`);
    this.index = index;
  }
}
