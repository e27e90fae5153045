import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { RedisStreamsModule } from '../src/index.js';

/** One deployable of the sample: the module of its feature plus the shared Redis Streams module. */
export function serviceModule(url: string, feature: Type): DynamicModule {
  @Module({})
  class ServiceModule {}
  return {
    module: ServiceModule,
    imports: [RedisStreamsModule.forRoot({ connection: url, isGlobal: true }), feature],
  };
}
