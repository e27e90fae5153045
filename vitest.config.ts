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
  },
});
