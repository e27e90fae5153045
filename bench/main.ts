// The benchmark run (`npm run bench [-- --quick] [-- --only e2e,emit] [-- --profile]`): starts a
// private redis-server, runs every scenario against its baselines, prints one table and writes the
// results as JSON (.bench-results/latest.json).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeCapabilities, probeCapabilities } from '../src/redis/capabilities.js';
import { RedisServerProcess } from '../test/helpers/redis-server.js';
import { benchConfig } from './config.js';
import { describeMachine, readLoadAverage } from './machine.js';
import { runScenario, type BenchContext, type Scenario, type ScenarioResult } from './measure.js';
import { renderTable, renderTargets } from './report.js';
import { backlogScenario } from './scenarios/backlog.js';
import { claimScenario } from './scenarios/claim.js';
import { clusterPartitionsScenario } from './scenarios/cluster-partitions.js';
import { consumeScenario } from './scenarios/consume.js';
import { delayedLatencyScenario, delayedMemoryScenario, delayedPromoteScenario } from './scenarios/delayed.js';
import { delayedWakeScenario } from './scenarios/delayed-wake.js';
import { emitScenario } from './scenarios/emit.js';
import { flowCostScenario, flowPauseScenario, flowRateScenario } from './scenarios/flow.js';
import { endToEndScenario } from './scenarios/end-to-end.js';
import { largePayloadScenario } from './scenarios/large-payload.js';
import { lightLoadScenario } from './scenarios/light-load.js';
import { idmpEmitScenario, workQueueConsumeScenario } from './scenarios/redis8.js';
import { requestReplyScenario } from './scenarios/request-reply.js';
import { shapeScenario } from './scenarios/shape.js';
import { evaluateTargets } from './targets.js';

const SCENARIOS: readonly Scenario[] = [
  emitScenario,
  idmpEmitScenario,
  consumeScenario,
  workQueueConsumeScenario,
  endToEndScenario,
  lightLoadScenario,
  requestReplyScenario(1),
  requestReplyScenario(100),
  claimScenario('NONE'),
  claimScenario('STORE'),
  backlogScenario,
  shapeScenario,
  largePayloadScenario,
  delayedPromoteScenario,
  delayedLatencyScenario,
  delayedMemoryScenario,
  delayedWakeScenario,
  flowRateScenario,
  flowCostScenario,
  flowPauseScenario,
  clusterPartitionsScenario,
];

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const config = benchConfig();
const resultsDir = process.env.BENCH_RESULTS_DIR ?? join(root, '.bench-results');
const log = (line: string) => console.log(line);
const startedAt = new Date();
const t0 = Date.now();

const named = (s: Scenario) => config.only.some((id) => s.id === id || s.id.startsWith(`${id}-`));
const selected = SCENARIOS.filter((s) => (config.only.length === 0 ? !s.optIn : named(s)));
log(`nestjs-redis-streams bench (${config.quick ? 'quick' : 'full'}): ${selected.map((s) => s.id).join(', ')}`);
const leftOut = config.only.length === 0 ? SCENARIOS.filter((s) => s.optIn).map((s) => s.id) : [];
if (leftOut.length > 0) log(`not in the default run (name them with --only): ${leftOut.join(', ')}`);

const server = await RedisServerProcess.start();
const admin = server.client();
const results: ScenarioResult[] = [];
let failed = false;
try {
  const machine = await describeMachine(admin);
  log(`machine: ${JSON.stringify(machine)}`);
  const capabilities = await probeCapabilities(admin);
  log(describeCapabilities(capabilities));
  const ctx: BenchContext = { config, server, admin, capabilities, log };
  for (const scenario of selected) {
    const started = Date.now();
    log(`\n${scenario.id}: ${scenario.title} (load ${readLoadAverage()})`);
    const skipped = scenario.skip?.(ctx);
    if (skipped !== undefined) {
      log(`  skipped: ${skipped}`);
      continue;
    }
    await admin.flushall();
    try {
      results.push(...(await runScenario(scenario, ctx)));
    } catch (error) {
      failed = true;
      log(`  scenario ${scenario.id} failed: ${(error as Error).stack ?? error}`);
    }
    log(`  (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  }
  failed ||= results.some((r) => r.error !== undefined && !/has not landed/.test(r.error));
  const outcomes = evaluateTargets(results);
  const elapsedS = (Date.now() - t0) / 1000;
  log(`\nResults (median of ${config.runs} run(s) after ${config.warmups} warm-up(s); ratios are to the row marked ref)\n`);
  log(renderTable(results, outcomes));
  log(`\nTargets\n${renderTargets(outcomes)}`);
  log(`\nfinished in ${elapsedS.toFixed(0)} s (load ${readLoadAverage()})`);
  mkdirSync(resultsDir, { recursive: true });
  const json = JSON.stringify({ startedAt: startedAt.toISOString(), elapsedS, config, machine, results, targets: outcomes }, null, 2);
  writeFileSync(join(resultsDir, 'latest.json'), json);
  writeFileSync(join(resultsDir, `${config.quick ? 'quick' : 'full'}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`), json);
  log(`results written to ${join(resultsDir, 'latest.json')}`);
} finally {
  await admin.quit().catch(() => undefined);
  await server.stop();
}
process.exit(failed ? 1 : 0);
