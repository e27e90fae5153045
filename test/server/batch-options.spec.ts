import { Controller, type Type } from '@nestjs/common';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { describe, it } from 'vitest';
import { expectListenOptionError } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

@Controller()
class TooLargeController {
  @EventPattern<string>('bad-batch', { batch: { size: 401 } })
  on(): void {}
}
@Controller()
class ZeroSizeController {
  @EventPattern<string>('bad-batch', { batch: { size: 0 } })
  on(): void {}
}
@Controller()
class NoSizeController {
  @EventPattern<string>('bad-batch', { batch: { waitMs: 10 } })
  on(): void {}
}
@Controller()
class NegativeWaitController {
  @EventPattern<string>('bad-batch', { batch: { size: 10, waitMs: -1 } })
  on(): void {}
}
@Controller()
class UnknownKeyController {
  @EventPattern<string>('bad-batch', { batch: { size: 10, flushMs: 5 } })
  on(): void {}
}
@Controller()
class NotAnObjectController {
  @EventPattern<string>('bad-batch', { batch: 100 })
  on(): void {}
}
@Controller()
class ManualBatchController {
  @EventPattern<string>('bad-batch', { batch: { size: 10 }, ackMode: 'manual' })
  on(): void {}
}
@Controller()
class IdempotentBatchController {
  @EventPattern<string>('bad-batch', { batch: { size: 10 }, idempotency: true })
  on(): void {}
}
@Controller()
class MessageBatchController {
  @MessagePattern<string>('bad-batch', { batch: { size: 10 } })
  on(): number {
    return 1;
  }
}

describe('extras.batch is validated in listen(), before any command', () => {
  const redis = useRedisServer();
  const cases: Array<[string, Type, string]> = [
    ['size above prefetch (400)', TooLargeController, 'extras.batch (handler "bad-batch").size'],
    ['size 0', ZeroSizeController, 'extras.batch (handler "bad-batch").size'],
    ['no size', NoSizeController, 'extras.batch (handler "bad-batch").size'],
    ['negative waitMs', NegativeWaitController, 'extras.batch (handler "bad-batch").waitMs'],
    ['unknown key', UnknownKeyController, 'extras.batch (handler "bad-batch").flushMs'],
    ['a number', NotAnObjectController, 'extras.batch (handler "bad-batch")'],
    ['ackMode manual', ManualBatchController, 'extras.batch (handler "bad-batch")'],
    ['idempotency', IdempotentBatchController, 'extras.batch (handler "bad-batch")'],
    ['a @MessagePattern', MessageBatchController, 'extras.batch (handler "bad-batch")'],
  ];
  for (const [title, controller, option] of cases) {
    it(`${title} → RedisStreamsOptionError naming "${option}"`, () =>
      expectListenOptionError(controller, redis.server.url, option, redis.client, 'bad-batch'));
  }
});
