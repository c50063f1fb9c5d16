import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

// Requests Node's HTTP parser refuses (a method it does not know, a lowercase method, a space or raw
// non-ASCII byte in the target, NUL in a header, Content-Length with Transfer-Encoding, a request head
// over the header size limit) never reach Fastify's routing. They get the firewall's kind of answer: a
// bare status, no body, no request id, and the connection closed, since the stream cannot be trusted.

const CLOSE_GRACE_MS = 5000;

/** The plain status for a parser error code: the firewall's 404 for a method, else 400 (431, 408 as Node). */
export function clientErrorStatus(code: string | undefined): 400 | 404 | 408 | 431 {
  switch (code) {
    case 'HPE_INVALID_METHOD':
      return 404;
    case 'HPE_HEADER_OVERFLOW':
      return 431;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    default:
      return 400;
  }
}

/** Fastify's `clientErrorHandler`: writes the plain answer and closes the connection. */
export function plainClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = () => {
    if (!socket.writable) return socket.destroy();
    const status = clientErrorStatus(error.code);
    // end(), not write() then destroy(): bytes still queued (an earlier response) go out before the socket closes.
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () =>
      socket.destroy(),
    );
    // A peer that never reads must not hold the socket open.
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  };
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  // A timeout belongs to the request still arriving: answer it now unless its response has begun (never a
  // status line inside a response). A parser error follows the request before it, which may still be
  // answering: let that finish, then answer and close.
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    if (inFlight?.headersSent) socket.destroy();
    else answer();
  } else if (inFlight && !inFlight.writableFinished) {
    inFlight.once('finish', answer);
    inFlight.once('close', () => {
      if (!inFlight.writableFinished) socket.destroy();
    });
  } else {
    answer();
  }
}
