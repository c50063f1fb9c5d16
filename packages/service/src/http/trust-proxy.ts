import ipaddr from 'ipaddr.js';

// Which peers may tell the API the client's address through `X-Forwarded-For` (docs/deploy.md). Without a
// setting the header is ignored and the socket's peer is the client. Fastify (its proxy-addr) walks the
// header from the right and stops at the first address it does not trust, so an entry a client wrote
// itself is never believed; this module only validates the setting and hands it to Fastify.

/** Trusted proxies by address or CIDR range, or a number of hops nearest the API. */
export type TrustProxy = { addresses: string[] } | { hops: number };

/** What Fastify's `trustProxy` option receives: addresses and ranges, or a function counting hops. */
export type FastifyTrustProxy = string[] | ((address: string, hop: number) => boolean);

export const MAX_TRUSTED_HOPS = 10;

/**
 * Parses the setting strictly; `setting` names it in the error. A whole number is a hop count (1 to 10);
 * anything else is a comma-separated list of IP addresses and CIDR ranges. Trusting every address (`true`,
 * `*`, a /0 range) is refused: it would let any client choose the address its lockouts, firewall budget
 * and allowlist see.
 */
export function parseTrustProxy(raw: string, setting: string): TrustProxy {
  const text = raw.trim();
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1 || hops > MAX_TRUSTED_HOPS) {
      throw new Error(`${setting}: a hop count is a whole number from 1 to ${MAX_TRUSTED_HOPS} (got ${text})`);
    }
    return { hops };
  }
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => entry === '')) throw new Error(`${setting}: an empty entry in "${text}"`);
  return { addresses: entries.map((entry) => trustedEntry(entry, setting)) };
}

function trustedEntry(entry: string, setting: string): string {
  if (!entry.includes('/')) {
    if (ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry)) return ipaddr.parse(entry).toString();
    throw new Error(`${setting}: not an IP address, CIDR range or hop count: ${entry}`);
  }
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(entry);
  } catch {
    throw new Error(`${setting}: not an IP address or CIDR range: ${entry}`);
  }
  const [address, bits] = parsed;
  if (address.kind() === 'ipv4' && !ipaddr.IPv4.isValidFourPartDecimal(entry.split('/')[0] ?? '')) {
    throw new Error(`${setting}: not a dotted-quad IPv4 range: ${entry}`);
  }
  if (bits === 0) throw new Error(`${setting}: a /0 range would trust every address: ${entry}`);
  // As in allowlists: a range written from a host address is more likely a typo than a wish.
  const network =
    address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(entry) : ipaddr.IPv6.networkAddressFromCIDR(entry);
  if (network.toString() !== address.toString()) {
    throw new Error(`${setting}: a range must start at its network address (${network}/${bits}): ${entry}`);
  }
  return `${address.toString()}/${bits}`;
}

/**
 * The setting as Fastify's `trustProxy` option. Fastify 5 treats a bare number as "trust nothing" (a hop
 * count cannot tell a proxy from a client talking to the port directly), so hops become a function: the
 * socket's peer is hop 0, the rightmost `X-Forwarded-For` entry hop 1, and so on.
 */
export function fastifyTrustProxy(trust: TrustProxy): FastifyTrustProxy {
  if ('addresses' in trust) return trust.addresses;
  const { hops } = trust;
  return (_address, hop) => hop < hops;
}
