// The cookies of Portico's own pages (the sign-in's binding, the consent page's answer, the patient's page): read from
// a Cookie header, and written HttpOnly on path / with no Domain, `Secure` where the browser reaches Portico over https
// (the `__Host-` names require it).

/** The value of cookie `name` in a Cookie header (the first, when a browser sends two); undefined when absent. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/** A Set-Cookie value; a `maxAgeSeconds` of 0 deletes the cookie. */
export function cookieLine(
  name: string,
  value: string,
  { secure, maxAgeSeconds, sameSite }: { secure: boolean; maxAgeSeconds: number; sameSite: 'Lax' | 'Strict' },
): string {
  return [
    `${name}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    'HttpOnly',
    `SameSite=${sameSite}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}
