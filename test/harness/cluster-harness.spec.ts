import { describe, expect, it } from 'vitest';
import { hashSlotOf } from '../../src/redis/keys.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';

describe('test harness: private Redis Cluster', () => {
  const harness = useRedisCluster();
  it('serves every slot from 3 masters, each with a replica', async () => {
    const cluster = harness.cluster;
    expect(cluster.nodes).toHaveLength(6);
    expect(await cluster.masters()).toHaveLength(3);
    const client = cluster.client();
    try {
      await client.set('a', '1');
      await client.set('b', '2');
      expect(await client.get('a')).toBe('1');
      expect((await cluster.masterOf(hashSlotOf('a'))).port).not.toBe((await cluster.masterOf(hashSlotOf('b'))).port);
    } finally {
      client.disconnect();
    }
  });
});
