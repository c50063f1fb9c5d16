// The console's one cookie, read and written by hand (a cookie library adds nothing for one name).

/** The value of cookie `name` in a `Cookie` header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  path: string;
  /** Seconds; 0 deletes the cookie. Unset: a cookie that ends with the browser. */
  maxAge?: number;
  secure: boolean;
}

/** A `Set-Cookie` value that scripts cannot read and other sites never send: HttpOnly, SameSite=Strict. */
export function setCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, `Path=${options.path}`, 'HttpOnly', 'SameSite=Strict'];
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}
