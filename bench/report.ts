import type { Metric, ScenarioResult } from './measure.js';
import type { TargetOutcome } from './targets.js';
import { TARGETS, targetsOf } from './targets.js';

/** The ratio column: throughput ours/ref (higher is better), latency and RSS ours/ref (lower is better). */
function ratioMetric(result: ScenarioResult): Metric | undefined {
  for (const metric of ['msgsPerSec', 'p50Ms', 'peakRssMb', 'bytesPerEntry'] as const) {
    if (result.median[metric] !== undefined) return metric;
  }
  return undefined;
}

export function ratioToReference(result: ScenarioResult, all: readonly ScenarioResult[]): string {
  const metric = ratioMetric(result);
  const reference = all.find((r) => r.scenario === result.scenario && r.impl === result.reference);
  const value = metric ? result.median[metric] : undefined;
  const refValue = metric ? reference?.median[metric] : undefined;
  if (value === undefined || refValue === undefined || refValue === 0) return '';
  const label = metric === 'msgsPerSec' ? '' : metric === 'p50Ms' ? ' p50' : metric === 'peakRssMb' ? ' RSS' : ' B';
  return `${(value / refValue).toFixed(2)}×${label}`;
}

const fmt = (value: number | undefined, digits = 0): string =>
  value === undefined || !Number.isFinite(value) ? '' : digits === 0 ? Math.round(value).toLocaleString('en-US') : value.toFixed(digits);

function rss(result: ScenarioResult): string {
  const { peakRssMb, rssGrowthMb } = result.median;
  if (peakRssMb === undefined) return '';
  return rssGrowthMb === undefined ? fmt(peakRssMb, 1) : `${fmt(peakRssMb, 1)} (+${fmt(rssGrowthMb, 1)})`;
}

/** The worker's CPU per entry, and its ratio to the reference row's when this row is not the reference. */
function cpuCell(result: ScenarioResult, all: readonly ScenarioResult[]): string {
  const reference = all.find((r) => r.scenario === result.scenario && r.impl === result.reference)?.median;
  const cell = (cpu: number | undefined, ref: number | undefined): string => {
    if (cpu === undefined || !Number.isFinite(cpu)) return '';
    if (result.impl === result.reference || ref === undefined || !(ref > 0)) return fmt(cpu, 2);
    return `${fmt(cpu, 2)} (${(cpu / ref).toFixed(2)}×)`;
  };
  const steady = cell(result.median.steadyCpuUsPerEntry, reference?.steadyCpuUsPerEntry);
  return [cell(result.median.cpuUsPerEntry, reference?.cpuUsPerEntry), ...(steady === '' ? [] : [`2nd half ${steady}`])].join(', ');
}

function targetCell(result: ScenarioResult, outcomes: readonly TargetOutcome[]): string {
  // Each target on the row of the contender it measures (`ours`: the per-entry server, or e.g. the batch one).
  const ids = targetsOf(result.scenario, result.impl).map((target) => target.id);
  if (ids.length === 0) return '';
  return outcomes
    .filter((outcome) => ids.includes(outcome.id))
    .map((outcome) => (outcome.status === 'n/a' ? 'n/a' : `${outcome.status === 'pass' ? 'PASS' : outcome.status === 'info' ? 'info' : 'FAIL'} ${shortText(outcome)}`))
    .join('; ');
}

function shortText(outcome: TargetOutcome): string {
  const target = TARGETS.find((t) => t.id === outcome.id)!;
  const op = target.op === '>=' ? '≥' : target.op === '<=' ? '≤' : '<';
  if (target.bound !== undefined) {
    const [label, unit, digits] = BOUND_UNITS[target.metric];
    const value = outcome.measured === undefined ? '?' : fmt(outcome.measured, digits);
    const bound = Number.isInteger(target.bound) ? fmt(target.bound) : String(target.bound);
    if (target.op === 'within') {
      // A deviation of a few tenths of a percent is the figure here: one decimal more.
      const measured = outcome.measured === undefined ? '?' : outcome.measured.toFixed(digits + 1);
      const deviation = outcome.measured === undefined ? '?' : `${(((outcome.measured - target.bound) / target.bound) * 100).toFixed(2)} %`;
      return `${label}${measured} ${unit} (${deviation}), ${bound} ± ${((target.tolerance ?? 0) * 100).toFixed(0)} %`;
    }
    return `${label}${value} ${op} ${bound} ${unit}`;
  }
  const measured = outcome.measured === undefined ? '?' : `${outcome.measured.toFixed(2)}×`;
  const metric =
    target.metric === 'msgsPerSec' ? '' : target.metric === 'steadyMsgsPerSec' ? '2nd half ' : target.metric === 'cpuUsPerEntry' ? 'CPU/entry ' : target.metric === 'steadyCpuUsPerEntry' ? '2nd-half CPU/entry ' : target.metric === 'peakRssMb' ? 'RSS ' : `${target.metric.replace('Ms', '')} `;
  const paired = outcome.paired === undefined ? '' : ` (paired runs ${outcome.paired.toFixed(2)}×)`;
  if (target.op === 'info') return `${metric}${measured} ${target.against}${paired}`;
  return `${metric}${measured} ${op} ${target.factor}× ${target.against}${paired}`;
}

/** How a bound target's value is shown: a label before it, the unit after the bound, decimals. */
const BOUND_UNITS: Record<Metric, [label: string, unit: string, digits: number]> = {
  msgsPerSec: ['', 'msg/s', 0],
  steadyMsgsPerSec: ['2nd half ', 'msg/s', 0],
  p50Ms: ['p50 ', 'ms', 1],
  p99Ms: ['p99 ', 'ms', 1],
  maxMs: ['max ', 'ms', 1],
  peakRssMb: ['RSS ', 'MB', 1],
  rssGrowthMb: ['growth ', 'MB', 1],
  bytesPerEntry: ['', 'B/entry', 1],
  cpuUsPerEntry: ['CPU ', 'µs/entry', 2],
  steadyCpuUsPerEntry: ['2nd-half CPU ', 'µs/entry', 2],
};

/** The results as an aligned text table (also valid Markdown); a `B/entry` column only when some row has one. */
export function renderTable(results: readonly ScenarioResult[], outcomes: readonly TargetOutcome[]): string {
  const bytes = results.some((result) => result.median.bytesPerEntry !== undefined);
  const header = ['scenario', 'implementation', 'msgs/s', '2nd half', 'p50 ms', 'p99 ms', 'RSS MB', 'CPU µs/entry', ...(bytes ? ['B/entry'] : []), 'vs ref', 'targets'];
  const rows = results.map((result) => [
    result.scenario,
    result.label,
    result.error && result.runs.length === 0 ? `(${result.error})` : fmt(result.median.msgsPerSec),
    fmt(result.median.steadyMsgsPerSec),
    fmt(result.median.p50Ms, 2),
    fmt(result.median.p99Ms, 2),
    rss(result),
    cpuCell(result, results),
    ...(bytes ? [fmt(result.median.bytesPerEntry, 1)] : []),
    result.impl === result.reference ? 'ref' : ratioToReference(result, results),
    targetCell(result, outcomes),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

export function renderTargets(outcomes: readonly TargetOutcome[]): string {
  return outcomes
    .map((outcome) => `${outcome.status.padEnd(4)}  ${outcome.text}${outcome.measured === undefined ? '' : `: ${shortText(outcome)}`}${outcome.why ? ` (${outcome.why})` : ''}`)
    .join('\n');
}
