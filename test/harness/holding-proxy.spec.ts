import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldingProxy } from '../helpers/holding-proxy.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The proxy's own faults keep every reply with its command: a spec reading a shifted reply proves nothing. */
describe('test harness: HoldingProxy.failNext', () => {
  const redis = useRedisServer();
  let proxy: HoldingProxy;
  let client: Redis;

  beforeAll(async () => {
    proxy = await HoldingProxy.start(redis.server.port);
    client = new Redis(proxy.url, { connectionName: 'proxied', maxRetriesPerRequest: 0 });
    await client.set('a', 'first');
    await client.set('b', 'last');
  });
  afterAll(async () => {
    client.disconnect();
    await proxy.close();
  });

  it('fails only the named command of a pipeline, in its place: the commands before and after it get their own replies', async () => {
    proxy.failNext('proxied', 'XRANGE', 'LOADING Redis is loading the dataset in memory');
    // One write: the GET before the XRANGE is not answered yet when the XRANGE reaches the proxy.
    const replies = await client.pipeline().get('a').xrange('s', '-', '+').get('b').exec();
    expect(replies?.map(([error, value]) => (error === null ? value : (error as Error).message))).toEqual([
      'first',
      'LOADING Redis is loading the dataset in memory',
      'last',
    ]);
    expect(proxy.failed).toBe(1);
    // Once only, and the connection's replies are still in step.
    expect(await client.xrange('s', '-', '+')).toEqual([]);
    expect(await client.get('a')).toBe('first');
  });
});
