import { setTimeout as delay } from 'node:timers/promises';
import type { Command } from 'commander';
import { integerArgument } from '../arguments.js';
import { flagsOf, type CliContext } from '../context.js';
import type { CliIo } from '../io.js';
import { jsonLine } from '../output.js';
import { wantsJson } from '../print.js';
import { withCliRedis } from '../redis-session.js';
import type { TopRow } from '../top/top-rows.js';
import { topView } from '../views/top.view.js';

interface TopFlags {
  group?: string[];
  deadLetterKey?: string;
  interval?: string;
  iterations?: string;
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/**
 * `top`: the chosen streams and groups, sampled every second until Ctrl-C. At a terminal the
 * screen is redrawn in place, a frame a write (ANSI cursor codes); otherwise one JSON line per sample.
 */
export function registerTopCommand(program: Command, { io }: CliContext): void {
  program
    .command('top')
    .description('live view of streams and groups: rate in/out, lag, pending, oldest pending idle time, consumers, dead letters, delayed entries held and due (Ctrl-C quits)')
    .argument('<keys...>', 'stream keys')
    .option('--group <group>', 'only this group (repeat for several); default every group of each stream', collect)
    .option('--dead-letter-key <key>', 'dead-letter stream key, or a template where %s stands for each stream key (the app\'s deadLetterKey setting); default {<key>}:dead')
    .option('--interval <ms>', 'milliseconds between samples, 100..60000 (default 1000)')
    .option('--iterations <n>', 'stop after this many samples (default: run until Ctrl-C)')
    .action(async (keys: string[], _options: unknown, command: Command) => {
      const flags = flagsOf<TopFlags>(command);
      const { integerOption, nonEmptyStringOption } = await import('../../validation.js');
      keys.forEach((key) => nonEmptyStringOption('key', key));
      const groups = flags.group ?? [];
      groups.forEach((group) => nonEmptyStringOption('group', group));
      if (flags.deadLetterKey !== undefined) nonEmptyStringOption('deadLetterKey', flags.deadLetterKey);
      const intervalMs = integerOption('interval', integerArgument(flags.interval), 1_000, 100, 60_000);
      const iterations = flags.iterations === undefined ? Number.POSITIVE_INFINITY : integerOption('iterations', integerArgument(flags.iterations), 1, 1);
      const [{ sampleStreams }, { topRows }, { redactUrl }, { resolveUrl }, { fillTemplate }] = await Promise.all([
        import('../top/top-sampler.js'),
        import('../top/top-rows.js'),
        import('../../redis/connection.js'),
        import('../connection.js'),
        import('../../recovery/dead-letter-key-option.js'),
      ]);
      const template = flags.deadLetterKey;
      const deadLetterKeyOf = template === undefined ? undefined : (stream: string) => fillTemplate(template, stream);
      const source = redactUrl(resolveUrl(flags, io));
      const show = wantsJson(io, flags) ? jsonLines(io) : screen(io.terminal!, source, intervalMs);

      const interrupted = new AbortController();
      const stopListening = io.onInterrupt(() => interrupted.abort());
      try {
        await withCliRedis(io, flags, async (redis) => {
          let previous;
          for (let sampled = 0; sampled < iterations && !interrupted.signal.aborted; sampled++) {
            if (sampled > 0) await delay(intervalMs, undefined, { signal: interrupted.signal }).catch(() => undefined);
            if (interrupted.signal.aborted) break;
            const sample = await sampleStreams(redis, keys, groups, deadLetterKeyOf);
            show(sample.at, topRows(sample, previous));
            previous = sample;
          }
        });
      } finally {
        stopListening();
      }
    });
}

function jsonLines(io: CliIo): (at: number, rows: TopRow[]) => void {
  return (at, rows) => io.stdout(`${jsonLine({ at: new Date(at).toISOString(), rows })}\n`);
}

/** The ANSI control sequences of a redraw in place: cursor to the top-left corner, erase to the end of the line, erase below. */
const CURSOR_HOME = '\u001b[H';
const ERASE_TO_LINE_END = '\u001b[K';
const ERASE_BELOW = '\u001b[J';

/**
 * Redraws from the top-left corner, clearing what the previous frame left to the right and below,
 * in one write: drawn line by line (three writes a line), a terminal showed the frame half drawn
 * whenever the process was descheduled between two writes, as on a loaded host.
 */
function screen(terminal: NodeJS.WriteStream, source: string, intervalMs: number): (at: number, rows: TopRow[]) => void {
  return (at, rows) => {
    const lines = topView({ source, intervalMs, at, rows }, terminal.columns).trimEnd().split('\n');
    terminal.write(`${CURSOR_HOME}${lines.map((line) => `${line}${ERASE_TO_LINE_END}\n`).join('')}${ERASE_BELOW}`);
  };
}
