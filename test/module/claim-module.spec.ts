import { fileURLToPath } from 'node:url';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_STORE_DIRECTORY } from '../../src/claim/claim-sinks.js';
import { StreamClaimService } from '../../src/module/claim-services.js';
import { StreamInspectionService } from '../../src/module/claim-services.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../../src/tokens.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { addEntries, createGroup, deliver, makeIdle } from '../helpers/claim-fixtures.js';

describe('claim and inspection services through Nest dependency injection', () => {
  const redis = useRedisServer();
  const storeDirectory = mkdtempSync(join(tmpdir(), 'nrs-claim-di-'));

  beforeAll(async () => {
    await createGroup(redis.client, 'orders', 'billing');
    await addEntries(redis.client, 'orders', 3);
    await makeIdle(redis.client, 'orders', 'billing', 'w1', await deliver(redis.client, 'orders', 'billing', 'w1'));
  });
  afterAll(async () => {
    await rm(storeDirectory, { recursive: true, force: true });
  });

  it('injects the connection and reads claim.storeDirectory from the module options', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [
        StreamClaimService,
        StreamInspectionService,
        { provide: REDIS_STREAMS_CONNECTION, useValue: redis.client },
        { provide: REDIS_STREAMS_MODULE_OPTIONS, useValue: { claim: { storeDirectory } } },
      ],
    }).compile();
    try {
      const claim = moduleRef.get(StreamClaimService);
      const result = await claim.claim({ key: 'orders', group: 'billing', consumer: 'r', minIdleTime: 'PT10M', fetchType: 'STORE' });
      expect(result.count).toBe(3);
      expect(fileURLToPath(result.uri).startsWith(storeDirectory)).toBe(true);
      const summary = await moduleRef.get(StreamInspectionService).pendingSummary('orders', 'billing');
      expect(summary.consumers).toEqual([{ name: 'r', pending: 3 }]);
    } finally {
      await moduleRef.close();
    }
  });

  it('works without module options (they are optional); STORE then defaults to <tmpdir>/nestjs-redis-streams', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [StreamClaimService, { provide: REDIS_STREAMS_CONNECTION, useValue: redis.client }],
    }).compile();
    try {
      const result = await moduleRef.get(StreamClaimService).claim({ key: 'orders', group: 'billing', consumer: 'r2', minIdleTime: 1, fetchType: 'STORE' });
      const path = fileURLToPath(result.uri);
      expect(path.startsWith(DEFAULT_STORE_DIRECTORY)).toBe(true);
      await rm(path, { force: true });
    } finally {
      await moduleRef.close();
    }
  });

  it('RedisStreamsModule.forRoot provides both services, with the claim section of its options', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedisStreamsModule.forRoot({ connection: redis.client, claim: { storeDirectory } })],
    }).compile();
    try {
      await redis.client.xclaim('orders', 'billing', 'w1', 0, ...(await redis.client.xrange('orders', '-', '+')).map(([id]) => id), 'IDLE', 3_600_000, 'JUSTID');
      const result = await moduleRef.get(StreamClaimService).claim({ key: 'orders', group: 'billing', consumer: 'r3', minIdleTime: 'PT10M', fetchType: 'STORE' });
      expect(result.count).toBe(3);
      expect(fileURLToPath(result.uri).startsWith(storeDirectory)).toBe(true);
      expect((await moduleRef.get(StreamInspectionService).groups('orders'))[0]?.name).toBe('billing');
    } finally {
      await moduleRef.close();
    }
  });
});
