import ipaddr from 'ipaddr.js';
import { AdminError } from '../../errors/admin-error.js';

// The canonical form of allowlist entries, decided where an integration's allowlist is written: IPv4
// addresses or CIDR ranges, a range starts at its network address, `/0` is refused, IPv6 entries are
// accepted (they never match: access/allowlist.ts). Parsing is ipaddr.js's, not hand-written bit arithmetic.

/** Validates one entry and returns its canonical text; throws `invalid_argument` with the reason. */
export function normalizeAllowlistEntry(entry: string): string {
  const text = entry.trim();
  if (text.includes('/')) {
    let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
    try {
      parsed = ipaddr.parseCIDR(text);
    } catch {
      throw new AdminError('invalid_argument', `not an IPv4 address or CIDR range: ${text}`);
    }
    const [address, bits] = parsed;
    if (address.kind() === 'ipv4' && !ipaddr.IPv4.isValidFourPartDecimal(text.split('/')[0] ?? '')) {
      throw new AdminError('invalid_argument', `not a dotted-quad IPv4 range: ${text}`);
    }
    if (bits === 0) throw new AdminError('invalid_argument', `a /0 range is refused: ${text}`);
    const network =
      address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(text) : ipaddr.IPv6.networkAddressFromCIDR(text);
    if (network.toString() !== address.toString()) {
      throw new AdminError(
        'invalid_argument',
        `a range must start at its network address (${network}/${bits}): ${text}`,
      );
    }
    return `${address.toString()}/${bits}`;
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text).toString();
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text).toString();
  throw new AdminError('invalid_argument', `not an IPv4 address or CIDR range: ${text}`);
}

/** Validates a whole list (size, duplicates removed, order kept). */
export function normalizeAllowlist(entries: readonly string[], maxSize: number): string[] {
  const out: string[] = [];
  for (const entry of entries) {
    const canonical = normalizeAllowlistEntry(entry);
    if (!out.includes(canonical)) out.push(canonical);
  }
  if (out.length > maxSize) {
    throw new AdminError('invalid_argument', `an allowlist holds at most ${maxSize} entries (got ${out.length})`);
  }
  return out;
}
