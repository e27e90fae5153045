import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../helpers/redis-server.js';

describe('test harness: private redis-server', () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('listens on a loopback port that is not 6379, without persistence', async () => {
    expect(server.port).not.toBe(6379);
    const redis = server.client();
    try {
      expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
      expect(await redis.config('GET', 'save')).toEqual(['save', '']);
    } finally {
      redis.disconnect();
    }
  });

  it('pause stops answers until resume', async () => {
    const redis = server.client();
    try {
      await redis.ping();
      server.pause();
      const reply = redis.ping();
      const raced = await Promise.race([reply, new Promise((r) => setTimeout(() => r('silent'), 300))]);
      expect(raced).toBe('silent');
      server.resume();
      expect(await reply).toBe('PONG');
    } finally {
      server.resume();
      redis.disconnect();
    }
  });

  it('restart keeps the port and, without AOF, loses the data', async () => {
    const redis = server.client();
    try {
      await redis.set('k', 'v');
      const port = server.port;
      await server.restart();
      expect(server.port).toBe(port);
      const fresh = server.client();
      expect(await fresh.get('k')).toBeNull();
      fresh.disconnect();
    } finally {
      redis.disconnect();
    }
  });

  it('with AOF on, a restart keeps the data', async () => {
    const aof = await RedisServerProcess.start({ appendOnly: true });
    try {
      const redis = aof.client();
      await redis.xadd('s', '*', 'a', '1');
      redis.disconnect();
      await aof.restart();
      const fresh = aof.client();
      expect(await fresh.xlen('s')).toBe(1);
      fresh.disconnect();
    } finally {
      await aof.stop();
    }
  });
});

describe('test harness: the host locale', () => {
  it('starts redis-server when LC_ALL names a locale this host has not generated (Redis 7+ would refuse to)', async () => {
    const saved = process.env.LC_ALL;
    process.env.LC_ALL = 'xx_NOWHERE.UTF-8';
    let server: RedisServerProcess | undefined;
    try {
      server = await RedisServerProcess.start();
      const redis = server.client();
      try {
        expect(await redis.ping()).toBe('PONG');
      } finally {
        redis.disconnect();
      }
    } finally {
      if (saved === undefined) delete process.env.LC_ALL;
      else process.env.LC_ALL = saved;
      await server?.stop();
    }
  });
});
