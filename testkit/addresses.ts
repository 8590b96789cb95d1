// Addresses the outbound policy admits and refuses, by range: one table for the policy's own tests and for
// every feature that applies it (webhook URLs, fetches).

export const PUBLIC = [
  '93.184.215.14',
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '11.0.0.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001:80b::200e',
  '::ffff:93.184.215.14',
  '2001:4860:4860::8888',
];

export const NOT_PUBLIC: [string, string[]][] = [
  ['loopback', ['127.0.0.1', '127.255.255.254', '::1']],
  ['unspecified', ['0.0.0.0', '0.1.2.3', '::']],
  ['private (RFC 1918)', ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1']],
  ['carrier-grade NAT 100.64/10', ['100.64.0.1', '100.127.255.254']],
  ['link-local', ['169.254.169.254', '169.254.0.1', 'fe80::1', 'febf::1']],
  ['multicast and broadcast', ['224.0.0.1', '239.255.255.250', '255.255.255.255', 'ff02::1', 'ff0e::1']],
  ['documentation and benchmarking', ['192.0.2.1', '198.51.100.7', '203.0.113.9', '198.18.0.1', '2001:db8::1']],
  ['reserved', ['240.0.0.1', '192.0.0.8', '100::1']],
  ['unique-local fc00::/7', ['fc00::1', 'fd12:3456:789a::1', 'fdff:ffff::1']],
  [
    'IPv4-mapped IPv6 of a private address',
    ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:0:0'],
  ],
  [
    'NAT64 64:ff9b::/96 and 64:ff9b:1::/48',
    ['64:ff9b::7f00:1', '64:ff9b::a00:1', '64:ff9b::5db8:d70e', '64:ff9b:1::1'],
  ],
  ['6to4 2002::/16', ['2002:7f00:1::1', '2002:c0a8:101::1', '2002:5db8:d70e::1']],
  ['Teredo 2001::/32', ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']],
  ['deprecated site-local', ['fec0::1']],
  // ipaddr.js calls these "unicast": the policy admits IPv6 only inside 2000::/3.
  [
    'IPv4-compatible IPv6 ::/96 (deprecated)',
    ['::127.0.0.1', '::7f00:1', '::169.254.169.254', '::a9fe:a9fe', '::10.0.0.1', '::8.8.8.8', '::2'],
  ],
  ['IPv6 outside 2000::/3 (unallocated)', ['1::1', '100:1::1', '4000::1', '8000::1', 'e000::1', 'fe00::1']],
];
