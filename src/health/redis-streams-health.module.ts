import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator } from './redis-streams-health.indicator.js';

/** Terminus plus `RedisStreamsHealthIndicator`, ready to inject into a health controller. */
@Module({
  imports: [TerminusModule],
  providers: [RedisStreamsHealthIndicator],
  exports: [RedisStreamsHealthIndicator, TerminusModule],
})
export class RedisStreamsHealthModule {}
