/**
 * How big each scenario is. `--quick` (or BENCH_QUICK=1) is a smoke run of a few seconds per
 * scenario; `--only e2e,claim` (or BENCH_ONLY) picks scenarios by id or id prefix; `--impl
 * streams,streams-otel` (or BENCH_IMPL) the contenders within them, by impl.
 */
export interface BenchConfig {
  quick: boolean;
  /** Measured runs per contender (the median is reported), after `warmups` unreported ones. */
  runs: number;
  warmups: number;
  /** Only run scenarios whose id contains one of these (from `--only a,b`). */
  only: string[];
  /** Only run these contenders (by impl, from `--impl streams,streams-otel`), every one when empty. */
  impls: string[];
  inFlight: number;
  emitMessages: number;
  consumeMessages: number;
  endToEndMessages: number;
  /** BullMQ is an order of magnitude slower; a smaller count keeps the run short (rates are compared). */
  bullmqMessages: number;
  lightLoadRate: number;
  lightLoadSeconds: number;
  requestsSerial: number;
  requestsParallel: number;
  claimEntries: number;
  backlogEntries: number;
  backlogSeconds: number;
  /** Delayed entries held, due, before one worker starts promoting them (delayed-promote). */
  delayedEntries: number;
  /** Measured seconds of delayed emits at `lightLoadRate` a second (delayed-latency), after a 1 s pre-roll. */
  delayedSeconds: number;
  /** Entries held for the memory figure (delayed-memory). */
  delayedMemoryEntries: number;
  /** Bursts of 20 delayed emits to an idle worker per run (delayed-wake). */
  delayedWakeBursts: number;
  /** Measured seconds of the shared rate limit (flow-rate), after a warm-up; and the backlog it reads. */
  flowRateSeconds: number;
  flowRateBacklog: number;
  /** Pause/resume cycles under load (flow-pause). */
  flowPauseCycles: number;
  /** MAXLEN ~ used by every raw XADD (the same cap our client applies by default). */
  maxLen: number;
}

export function benchConfig(argv: readonly string[] = process.argv.slice(2), env = process.env): BenchConfig {
  const quick = argv.includes('--quick') || env.BENCH_QUICK === '1';
  const config = sized(quick, argv, env);
  // `--runs N` / `--warmups N` (e.g. a single run of every scenario under --profile).
  const count = (flag: string) => {
    const index = argv.indexOf(flag);
    const value = index >= 0 ? Number(argv[index + 1]) : Number.NaN;
    return Number.isInteger(value) && value >= 0 ? value : undefined;
  };
  return { ...config, runs: Math.max(1, count('--runs') ?? config.runs), warmups: count('--warmups') ?? config.warmups };
}

function sized(quick: boolean, argv: readonly string[], env: NodeJS.ProcessEnv): BenchConfig {
  const onlyIndex = argv.indexOf('--only');
  const only = onlyIndex >= 0 ? (argv[onlyIndex + 1] ?? '').split(',').filter(Boolean) : (env.BENCH_ONLY ?? '').split(',').filter(Boolean);
  const implIndex = argv.indexOf('--impl');
  const impls = implIndex >= 0 ? (argv[implIndex + 1] ?? '').split(',').filter(Boolean) : (env.BENCH_IMPL ?? '').split(',').filter(Boolean);
  const base = {
    quick,
    only,
    impls,
    inFlight: 256,
    lightLoadRate: 1000,
    maxLen: 100_000,
  };
  if (quick) {
    return {
      ...base,
      runs: 1,
      warmups: 1,
      emitMessages: 5_000,
      consumeMessages: 5_000,
      endToEndMessages: 5_000,
      bullmqMessages: 2_000,
      lightLoadSeconds: 1,
      requestsSerial: 200,
      requestsParallel: 2_000,
      claimEntries: 5_000,
      backlogEntries: 20_000,
      backlogSeconds: 2,
      delayedEntries: 10_000,
      delayedSeconds: 2,
      delayedMemoryEntries: 10_000,
      delayedWakeBursts: 3,
      flowRateSeconds: 5,
      flowRateBacklog: 10_000,
      flowPauseCycles: 5,
    };
  }
  return {
    ...base,
    runs: 5,
    warmups: 1,
    emitMessages: 100_000,
    consumeMessages: 100_000,
    endToEndMessages: 100_000,
    bullmqMessages: 10_000,
    lightLoadSeconds: 5,
    requestsSerial: 2_000,
    requestsParallel: 20_000,
    claimEntries: 100_000,
    backlogEntries: 1_000_000,
    backlogSeconds: 8,
    delayedEntries: 100_000,
    delayedSeconds: 10,
    delayedMemoryEntries: 100_000,
    delayedWakeBursts: 15,
    flowRateSeconds: 30,
    // 30 s at 1000/s, the warm-up and the first full bucket, with room to spare.
    flowRateBacklog: 40_000,
    flowPauseCycles: 20,
  };
}
