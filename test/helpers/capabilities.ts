import type { Redis } from 'ioredis';
import { probeCapabilities, type RedisStreamsCapabilities } from '../../src/redis/capabilities.js';

const probed = new WeakMap<Redis, Promise<RedisStreamsCapabilities>>();

/**
 * What the test's own redis-server supports (probed once per client), so a test that depends on
 * a server feature asserts the documented behaviour of the server it runs on. The probe itself is
 * checked against each server's real behaviour in capabilities.spec.ts.
 */
export function capabilitiesOf(client: Redis): Promise<RedisStreamsCapabilities> {
  let capabilities = probed.get(client);
  if (capabilities === undefined) probed.set(client, (capabilities = probeCapabilities(client)));
  return capabilities;
}
