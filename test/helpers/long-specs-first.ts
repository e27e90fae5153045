import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The spec files that took 10 s or more in a clean clone's `npm test` (2026-12-05, hooks included),
 * longest first. vitest starts the files it has durations of longest first; a clean clone has none
 * (`node_modules/.vite/vitest/<hash>/results.json`), so it started the largest files first and ran
 * `root/package-contents` (a small file whose `npm pack` builds dist/) last, alone: one worker idle
 * for the run's last ~13 s. A name that no longer matches a file is ignored.
 */
export const LONG_SPECS = [
  'test/e2e/lease-thread.spec.ts',
  'test/recovery/lease-thread.spec.ts',
  'test/cli/cli-commands.spec.ts',
  'test/e2e/acl.spec.ts',
  'test/e2e/recovery-crash.spec.ts',
  'test/dashboard/dashboard-entries-browser.spec.ts',
  'test/dashboard/dashboard-bulk-browser.spec.ts',
  'test/e2e/cluster.spec.ts',
  'test/dashboard/dashboard-page-controls.spec.ts',
  'test/dashboard/dashboard-browser.spec.ts',
  'test/flow/rate-limit-faults.spec.ts',
  'test/e2e/sentinel-failover.spec.ts',
  'test/cli/cli-pause.spec.ts',
  'test/e2e/secret-leaks.spec.ts',
  'test/cli/cli-usage.spec.ts',
  'test/e2e/sentinel-frozen-sentinel.spec.ts',
  'test/e2e/flow-faults.spec.ts',
  'test/e2e/delayed-faults.spec.ts',
  'test/cli/cli-top.spec.ts',
  'test/dashboard/dashboard-charts-browser.spec.ts',
  'test/cli/cli-delayed.spec.ts',
  'test/root/package-contents.spec.ts',
  'test/e2e/batch-crash.spec.ts',
  'test/e2e/readme-quickstart.spec.ts',
  'test/e2e/tls.spec.ts',
  'test/dashboard/dashboard-charts.spec.ts',
  'test/server/server-shutdown.spec.ts',
  'test/server/server-flow-control.spec.ts',
  'test/flow/rate-limit.spec.ts',
];

/**
 * vitest's order (a project's files together, the isolated project first; with durations from an
 * earlier run, longest first), except that where vitest knows no file's duration, the LONG_SPECS
 * of each project start first, in the list's order, and the rest follow in vitest's order.
 */
export class LongSpecsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const key = (file: TestSpecification) => `${file.project.name}:${relative(root, file.moduleId)}`;
    if (sorted.some((file) => this.ctx.cache.getFileTestResults(key(file)) !== undefined)) return sorted;
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    const rank = (file: TestSpecification) => {
      const listed = LONG_SPECS.indexOf(relative(root, file.moduleId));
      return listed === -1 ? LONG_SPECS.length : listed;
    };
    const position = new Map(sorted.map((file, index) => [file, index]));
    return [...sorted].sort(
      (a, b) =>
        projects.indexOf(a.project.name) - projects.indexOf(b.project.name) ||
        rank(a) - rank(b) ||
        (position.get(a) ?? 0) - (position.get(b) ?? 0),
    );
  }
}
