import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheckService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsHealthModule } from '../src/health/index.js';

/**
 * `GET /health/live` (liveness: the read loops are not stuck) and `GET /health` (readiness:
 * connections, Redis answers, recovery ticks, and at most 100 entries pending per stream + group).
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly streams: RedisStreamsHealthIndicator,
  ) {}

  @Get('live')
  live() {
    return this.health.check([() => this.streams.isAlive('redis-streams')]);
  }

  @Get()
  ready() {
    return this.health.check([() => this.streams.isHealthy('redis-streams', { thresholds: { pending: 100 } })]);
  }
}

@Module({ imports: [RedisStreamsHealthModule], controllers: [HealthController] })
export class HealthModule {}
