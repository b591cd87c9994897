import net from 'node:net';

import ipaddr from 'ipaddr.js';

/**
 * Addresses a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE=true: every address of the IANA
 * special-purpose registries (IPv4 and IPv6), as ipaddr.js classifies them: loopback, private,
 * link-local, carrier-grade NAT, unspecified, broadcast, multicast, reserved, documentation and
 * benchmarking ranges, unique-local, and the IPv6 ranges that reach IPv4 addresses through a
 * translator or tunnel (6to4 `2002::/16`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, Teredo,
 * IPv4-translated). An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is judged as the IPv4
 * address. Only global unicast addresses pass. A webhook URL is chosen by a company; without this
 * rule it could make the service call its own internal network.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return true;
  let parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() !== 'unicast';
}

/** A URL's host written as an IP address (IPv6 in brackets, as a URL has it): the address; else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.replace(/^\[|\]$/gu, '');
  return net.isIP(bare) !== 0 ? bare : undefined;
}
