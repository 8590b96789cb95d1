// No test may reach beyond loopback: nock refuses every other connection (shared by both root hook files).
import nock from 'nock';

export function allowLoopbackOnly(): void {
  nock.disableNetConnect();
  nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(host));
}
