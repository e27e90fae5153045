import type { Command } from 'ioredis';
import { Cluster, type Redis } from './ioredis.js';
import { startTimeoutVerdict } from '../timeout.js';

/**
 * ioredis' `commandTimeout` rejects a command with "Command timed out" from a plain timer. After a
 * long event-loop stall (a synchronous burst of work right after a command was written) that timer
 * runs before the socket is read, so a reply Redis sent in time is reported as a timeout (and an
 * XADD that was written is reported as failed). This routes each command's timeout through
 * `startTimeoutVerdict`, which gives pending replies one turn of the event loop first. The option
 * itself stays ioredis' (it decides which commands get a timeout, and for how long).
 *
 * A client without `commandTimeout` (the server's connections, unless the user sets one) arms no
 * timer, so it is left as it is: its commands get nothing of ours.
 */
export function judgeCommandTimeoutsAfterReads<T extends Redis | Cluster>(client: T): T {
  if (!hasCommandTimeout(client)) return client;
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  const sendCommand = (command: Command, ...rest: unknown[]): unknown => {
    deferTimeoutVerdict(command as JudgedCommand);
    return send(command, ...rest);
  };
  (client as unknown as { sendCommand: typeof sendCommand }).sendCommand = sendCommand;
  return client;
}

/** ioredis arms a command's timer only when this is a number (a Cluster: in the options of its nodes). */
function hasCommandTimeout(client: Redis | Cluster): boolean {
  const options = client instanceof Cluster ? client.options.redisOptions : client.options;
  return typeof options?.commandTimeout === 'number';
}

const judged = Symbol('nestjs-redis-streams.judgedTimeout');

/**
 * Whether the commandTimeout of a command handed over before has run out (its verdict is due or
 * given, whatever promise it holds now: a Cluster gives a re-sent command a fresh one). A command
 * not written yet must then stay unwritten (./settled-command-guard.ts).
 */
export function commandTimeoutRanOut(command: Command): boolean {
  const deadline = (command as JudgedCommand)[judged]?.deadline;
  return deadline !== undefined && Date.now() >= deadline;
}

/** A command's timeout, as first armed: its deadline, and whether a timer runs for it now. */
interface TimeoutState {
  deadline: number | undefined;
  armed: boolean;
}

type JudgedCommand = Command & { [judged]?: TimeoutState };

function deferTimeoutVerdict(command: JudgedCommand): void {
  // A Cluster hands the same command to a node client (and may resend it): set up once.
  if (command[judged] !== undefined) return;
  command[judged] = { deadline: undefined, armed: false };
  // One function for all commands instead of a closure stored on each: measured, the stored
  // closures kept every reply alive through young-generation GCs (docs/benchmarks.md, "GC
  // survivors"). The timer's own closures below exist only while ioredis has a timer armed.
  command.setTimeout = judgedSetTimeout;
}

/** `Command#setTimeout` of a judged command (ioredis calls it as a method, once per send). */
function judgedSetTimeout(this: JudgedCommand, ms: number): void {
  const state = this[judged] as TimeoutState;
  // Sent again: the first deadline holds, as in ioredis. A Cluster pipeline sent again after
  // MOVED / ASK / TRYAGAIN / CLUSTERDOWN gives the command a fresh promise once the first one
  // was rejected (which disarmed the timer): armed again for what is left of that deadline,
  // or the re-sent XADD had no timeout at all.
  if (state.armed) return;
  state.armed = true;
  state.deadline ??= Date.now() + ms;
  const cancel = startTimeoutVerdict(() => {
    if (!this.isSettled) this.reject(new Error('Command timed out'));
  }, Math.max(0, state.deadline - Date.now()));
  const disarm = (): void => {
    state.armed = false;
    cancel();
  };
  void this.promise.then(disarm, disarm);
}
