import { defineConfig } from 'vitest/config';
import { LongSpecsFirst } from './test/helpers/long-specs-first.js';

/**
 * Specs that drive whole processes, fleets, sentinels, Chromium or timing-bound faults run each in
 * a fresh worker: nothing another file left running can take their CPU or meet their ports.
 */
const ISOLATED = ['test/e2e/**/*.spec.ts', 'test/dashboard/*-browser.spec.ts', 'test/cli/**/*.spec.ts', 'test/flow/*-faults.spec.ts'];

export default defineConfig({
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each spec file starts its own redis-server; two cores bound useful parallelism.
    maxWorkers: 2,
    fileParallelism: true,
    // A clean clone has no durations to start the long files first by: a committed list of them.
    sequence: { sequencer: LongSpecsFirst },
    projects: [
      {
        extends: true,
        // The other spec files share their worker's modules: isolated, each file re-imported
        // Nest, rxjs, ioredis and ~200 of our modules (import 284 s of CPU in a 657 s run). They
        // must not rely on module state being fresh (test/README.md "Isolation").
        // Negated includes, not `exclude`: a project's own exclude would drop the CLI's `--exclude` (test-matrix.mjs).
        test: { name: 'shared', include: ['test/**/*.spec.ts', ...ISOLATED.map((glob) => `!${glob}`)], isolate: false },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED, isolate: true } },
    ],
  },
});
