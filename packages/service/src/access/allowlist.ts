import ipaddr from 'ipaddr.js';

// IP allowlist rules of the spec at request time: an empty list allows any address, IPv6 entries never match
// (the service is reachable over IPv4 only). Entries are stored in canonical form (write/commands/allowlist-entries.ts).
// Matching is ipaddr.js's, not hand-written bit arithmetic.

/** True when `ip` may use the integration: empty list, or an IPv4 entry covering the address. */
export function allowlistAllows(allowlist: readonly string[], ip: string): boolean {
  if (allowlist.length === 0) return true;
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // `process` turns an IPv4-mapped IPv6 address (::ffff:a.b.c.d, as Node reports on dual-stack sockets) into IPv4.
    address = ipaddr.process(ip);
  } catch {
    return false;
  }
  if (address.kind() !== 'ipv4') return false;
  const v4 = address as ipaddr.IPv4;
  for (const entry of allowlist) {
    if (entry.includes('/')) {
      const [net, bits] = ipaddr.parseCIDR(entry);
      if (net.kind() === 'ipv4' && v4.match(net as ipaddr.IPv4, bits)) return true;
    } else if (ipaddr.IPv4.isValidFourPartDecimal(entry) && v4.toString() === entry) {
      return true;
    }
  }
  return false;
}
