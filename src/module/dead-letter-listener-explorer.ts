import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { deadLetterListeners, type DeadLetterListener } from '../recovery/dead-letter-listeners.js';
import { ON_DEAD_LETTER, type OnDeadLetterMetadata } from '../recovery/on-dead-letter.decorator.js';
import type { DeadLetterNotice } from '../recovery/recovery-events.js';

/** Finds the app's `@OnDeadLetter()` methods at module init and registers them for every server's dead letters. */
@Injectable()
export class DeadLetterListenerExplorer implements OnModuleInit, OnModuleDestroy {
  private readonly registered: DeadLetterListener[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      // A request-scoped provider has no instance to call outside a request.
      if (instance === null || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      for (const name of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
        const method = instance[name];
        if (typeof method !== 'function') continue;
        const metadata = Reflect.getMetadata(ON_DEAD_LETTER, method) as OnDeadLetterMetadata | undefined;
        if (metadata === undefined) continue;
        const listener: DeadLetterListener = {
          pattern: metadata.pattern,
          name: `${instance.constructor.name}.${name}`,
          call: (letter: DeadLetterNotice) => (method as (letter: DeadLetterNotice) => unknown).call(instance, letter),
        };
        this.registered.push(listener);
        deadLetterListeners.add(listener);
      }
    }
  }

  onModuleDestroy(): void {
    for (const listener of this.registered.splice(0)) deadLetterListeners.delete(listener);
  }
}
