import { Controller, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, type AsyncMicroserviceOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/program.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import type { RedisStreamsModuleOptions } from '../../src/module/redis-streams-module.options.js';
import { RedisStreamsServerFactory } from '../../src/module/redis-streams-server.factory.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

@Controller()
class KeyedController {
  @EventPattern('keyed')
  handle(_data: unknown): void {}
}

/** One dead-letter key setting: the module's `deadLetters.deadLetterKey`, read by the servers it builds, the service and the CLI. */
describe('one dead-letter key for servers, DeadLetterService and the CLI (real redis-server)', () => {
  const redis = useRedisServer();
  afterEach(() => vi.restoreAllMocks());

  /** A microservice whose server comes from RedisStreamsServerFactory; an undecodable entry is dead-lettered at once. */
  async function deadLetterOneEntry(options: RedisStreamsModuleOptions, stream: string): Promise<DeadLetterService> {
    await redis.client.del(stream);
    @Module({ imports: [RedisStreamsModule.forRoot({ connection: redis.server.url, ...options })], controllers: [KeyedController] })
    class AppModule {}
    const app = await NestFactory.createMicroservice<AsyncMicroserviceOptions>(AppModule, {
      logger: false,
      inject: [RedisStreamsServerFactory],
      useFactory: (factory: RedisStreamsServerFactory) => ({ strategy: factory.create({ group: 'g', consumer: 'c', blockMs: 100 }) }),
    });
    await app.listen();
    try {
      await redis.client.xadd(stream, '*', 'pattern', 'keyed', 'no-data-field', '1');
      const service = app.get(DeadLetterService);
      await waitFor(async () => (await service.list(stream)).deadLetters.length === 1, 'dead letter seen by DeadLetterService');
      return service;
    } finally {
      await app.close();
    }
  }

  it('deadLetters.deadLetterKey (a function) is where the factory-built server writes and where the service reads', async () => {
    const service = await deadLetterOneEntry({ deadLetters: { deadLetterKey: (stream) => `{${stream}}:graveyard` } }, 'keyed');
    expect(service.deadLetterKeyFor('keyed')).toBe('{keyed}:graveyard');
    expect(await redis.client.xlen('{keyed}:graveyard')).toBe(1);
    expect(await redis.client.exists('{keyed}:dead')).toBe(0);
    await redis.client.del('{keyed}:graveyard');
  });

  it('the older module spelling server.recovery.deadLetterKey still works, feeds the service too and warns once', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const options: RedisStreamsModuleOptions = { server: { recovery: { deadLetterKey: '{%s}:dlq' } } };
    const service = await deadLetterOneEntry(options, 'keyed');
    expect(service.deadLetterKeyFor('keyed')).toBe('{keyed}:dlq');
    expect(await redis.client.xlen('{keyed}:dlq')).toBe(1);
    RedisStreamsModule.forRoot(options); // a second module with the old spelling: no second warning
    const deprecations = warn.mock.calls.filter(([message]) => String(message).includes('server.recovery.deadLetterKey is deprecated'));
    expect(deprecations).toHaveLength(1);
    await redis.client.del('{keyed}:dlq');
  });

  it('a template with %s is the same setting on the command line: dlq list and top read that key', async () => {
    await redis.client.del('cli-keyed', '{cli-keyed}:dlq');
    const moduleRef = await Test.createTestingModule({
      imports: [RedisStreamsModule.forRoot({ connection: redis.server.url, deadLetters: { deadLetterKey: '{%s}:dlq' } })],
    }).compile();
    try {
      const service = moduleRef.get(DeadLetterService);
      await redis.client.xgroup('CREATE', 'cli-keyed', 'g', '0', 'MKSTREAM');
      const id = (await redis.client.xadd('cli-keyed', '*', 'n', '1')) as string;
      await redis.client.xreadgroup('GROUP', 'g', 'c', 'STREAMS', 'cli-keyed', '>');
      await service.moveToDeadLetter({ stream: 'cli-keyed', group: 'g', ids: [id], reason: 'manual' });
    } finally {
      await moduleRef.close();
    }
    const listed = JSON.parse(await cli(['dlq', 'list', 'cli-keyed', '--dead-letter-key', '{%s}:dlq']));
    expect(listed.deadLetterKey).toBe('{cli-keyed}:dlq');
    expect(listed.deadLetters.map((letter: { sourceStream: string }) => letter.sourceStream)).toEqual(['cli-keyed']);
    const sample = JSON.parse(await cli(['top', 'cli-keyed', '--dead-letter-key', '{%s}:dlq', '--iterations', '1']));
    expect(sample.rows.find((row: { stream: string }) => row.stream === 'cli-keyed').deadLetters).toBe(1);
  });

  it('names the option when the settings disagree or the value is no key setting', async () => {
    expect(() => RedisStreamsModule.forRoot({ deadLetters: { deadLetterKey: 'a-%s' }, server: { recovery: { deadLetterKey: 'b-%s' } } })).toThrow(
      expect.objectContaining({ option: 'server.recovery.deadLetterKey' }) as Error,
    );
    expect(() => new DeadLetterService(redis.client, { deadLetterKey: 'no-placeholder' })).toThrow(RedisStreamsOptionError);
    const moduleRef = await Test.createTestingModule({
      imports: [RedisStreamsModule.forRoot({ connection: redis.server.url, deadLetters: { deadLetterKey: '{%s}:dlq' } })],
    }).compile();
    try {
      const factory = moduleRef.get(RedisStreamsServerFactory);
      expect(() => factory.create({ group: 'g', recovery: { deadLetterKey: '{%s}:other' } })).toThrow(
        expect.objectContaining({ option: 'recovery.deadLetterKey' }) as Error,
      );
      expect(() => factory.create({ group: 'g', recovery: { deadLetterKey: '{%s}:dlq' } })).not.toThrow();
    } finally {
      await moduleRef.close();
    }
  });

  async function cli(args: string[]): Promise<string> {
    const io: CliIo & { out: string; err: string } = {
      out: '',
      err: '',
      stdout: (text: string) => void (io.out += text),
      stderr: (text: string) => void (io.err += text),
      env: {},
      readStdin: async () => '',
      terminal: undefined,
      onInterrupt: () => () => undefined,
    };
    const code = await runCli([...args, '--url', redis.server.url], io);
    expect(io.err).toBe('');
    expect(code).toBe(0);
    return io.out;
  }
});
