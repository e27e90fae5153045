import { defineConfig } from 'vitest/config';

export default defineConfig({
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    include: ['test/**/*.spec.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each spec file starts its own redis-server; two cores bound useful parallelism.
    maxWorkers: 2,
    fileParallelism: true,
    // Spec files share their worker's modules: isolated, each file re-imported Nest, rxjs, ioredis
    // and ~200 of our modules (import 284 s of CPU in a 657 s run; 20 s without). Specs must not
    // rely on module state being fresh (test/README.md "Isolation").
    isolate: false,
  },
});
