import { connect, type Socket } from 'node:net';

// A client that speaks HTTP by hand, so a test can stall mid-head or mid-body, or stay silent.

export interface RawConnection {
  socket: Socket;
  /** Bytes received so far. */
  received(): string;
  /** Resolves with everything received once the server (or the test) has closed the connection. */
  closed: Promise<string>;
}

/** Opens a connection to the server of `base` (`http://host:port/v1`) and writes `first`, if given. */
export function rawConnect(base: string, first?: string): RawConnection {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  // A reset is a close too: what matters is that the server let go.
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  if (first !== undefined) socket.write(first);
  return { socket, received: () => received, closed };
}

/**
 * A search request for an email, as its head and its body (write them in pieces to trickle it). With
 * `announce`, the head asks `Expect: 100-continue`: the server's `100 Continue` then shows the request is
 * in its hands (accepted and routed), so a test can signal the server knowing the request is in flight.
 */
export function searchRequest(key: string, team: string, announce = false): { head: string; body: string } {
  const body = JSON.stringify({ email: 'nobody@example.com' });
  const head = [
    'POST /v1/leads/search HTTP/1.1',
    'Host: localhost',
    `Authorization: Bearer ${key}`,
    `Service-Team: ${team}`,
    'Content-Type: application/json',
    `Content-Length: ${body.length}`,
    ...(announce ? ['Expect: 100-continue'] : []),
    '',
    '',
  ].join('\r\n');
  return { head, body };
}

/** The server's answer to `Expect: 100-continue`. */
export const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/** Resolves once `read()` contains `text` (polling), or rejects after `ms`. */
export async function waitFor(read: () => string, text: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!read().includes(text)) {
    if (Date.now() > until) throw new Error(`"${text}" did not appear within ${ms} ms in: ${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many times `text` occurs in `haystack`. */
export const count = (haystack: string, text: string): number => haystack.split(text).length - 1;
