import { CODE_CLASSES, classForStatus } from '@crm-export/client';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/errors/catalogue.js';

// The reference consumer keeps its own table of wire codes (it has no dependency on the service's code),
// so nothing but this test stops the two from drifting apart.
describe("the client's error codes follow the service's catalogue", () => {
  it('the client knows every code the service can answer, and no code the service lacks', () => {
    expect(Object.keys(CODE_CLASSES).sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
  });

  it("each code's client class is the one its HTTP status in the catalogue calls for", () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      expect({ code, cls: CODE_CLASSES[code as keyof typeof CODE_CLASSES].name }).toEqual({
        code,
        cls: classForStatus(status).name,
      });
    }
  });
});
