import { randomUUID } from 'node:crypto';
import { RedisStreamsMissingCommandError } from '../errors.js';
import { isClusterClient } from './cluster-client.js';
import type { RedisClient } from './connection.js';

/**
 * What the connected Redis (or Valkey) server supports, learned from its commands and its replies
 * to a few harmless probes, never from its version string (Valkey 8 reports 7.2.4; Redis
 * milestones report 7.9.x). A capability is `true` only when the server showed it.
 */
export interface RedisStreamsCapabilities {
  /** XAUTOCLAIM (Redis 6.2+): `StreamClaimService.claim()` and the CLI's `claim`. */
  readonly xautoclaim: boolean;
  /**
   * The stream tracks entries added and each group's entries read (Redis 7.0+, Valkey): XINFO
   * reports `entries-added`, `entries-read` and `lag`, so entries trimmed before a group read them
   * are counted. Probed by XSETID's ENTRIESADDED argument, which came with it. Those servers also
   * drop pending ids whose entries were deleted from XCLAIM/XAUTOCLAIM replies and report them
   * (`deletedIds` of a claim, `deleted` of a lease renewal); without it (6.2) such ids stay pending.
   */
  readonly lagTracking: boolean;
  /** KEEPREF / DELREF / ACKED on XADD and XTRIM (Redis 8.2+). */
  readonly deletionPolicies: boolean;
  /** XACKDEL (Redis 8.2+): acknowledge and delete in one command. */
  readonly xackdel: boolean;
  /** XDELEX (Redis 8.2+): delete with a KEEPREF / DELREF / ACKED policy. */
  readonly xdelex: boolean;
  /** IDMP / IDMPAUTO on XADD (Redis 8.6+): idempotent producing. */
  readonly idmp: boolean;
  /** XCFGSET (Redis 8.6+): a stream's IDMP settings. */
  readonly xcfgset: boolean;
  /** Commands the transport uses that the server does not know (too old, or renamed away), e.g. `['XAUTOCLAIM']`. */
  readonly missingCommands: readonly RedisCommandName[];
  /**
   * Capabilities whose probe the server answered with neither yes nor no (e.g. NOPERM on the probe
   * key for the argument probes); they read `false` (and `missingCommands` lists nothing unprobed).
   * An ACL without COMMAND is no such case: the commands are then asked one by one.
   */
  readonly unprobed: readonly (keyof RedisStreamsCapabilities)[];
}

/** Commands the transport sends, with the first Redis version that has each (for error messages). */
export const COMMAND_SINCE = {
  XADD: '5.0',
  XREAD: '5.0',
  XREADGROUP: '5.0',
  XACK: '5.0',
  XCLAIM: '5.0',
  XPENDING: '5.0',
  XGROUP: '5.0',
  XINFO: '5.0',
  XRANGE: '5.0',
  XREVRANGE: '5.0',
  XDEL: '5.0',
  XLEN: '5.0',
  XAUTOCLAIM: '6.2',
  XACKDEL: '8.2',
  XDELEX: '8.2',
  XCFGSET: '8.6',
  EVALSHA: '2.6',
  EVAL: '2.6',
  CLIENT: '2.4',
  TIME: '2.6',
  PEXPIRE: '2.6',
  DEL: '1.0',
} as const;

export type RedisCommandName = keyof typeof COMMAND_SINCE;

/** Commands only some servers have: their absence is a capability, not a missing command. */
const OPTIONAL_COMMANDS: ReadonlySet<RedisCommandName> = new Set(['XACKDEL', 'XDELEX', 'XCFGSET']);
const PROBED_COMMANDS = Object.keys(COMMAND_SINCE) as RedisCommandName[];
/** Capabilities that are one command each. */
const COMMAND_CAPABILITIES: readonly [keyof RedisStreamsCapabilities, RedisCommandName][] = [
  ['xautoclaim', 'XAUTOCLAIM'],
  ['xackdel', 'XACKDEL'],
  ['xdelex', 'XDELEX'],
  ['xcfgset', 'XCFGSET'],
];

/** Commands a `RedisStreamsServer` (reading, acking, recovery, dead letters, handoff, replies) cannot work without. */
export const SERVER_COMMANDS: readonly RedisCommandName[] = [
  'XREADGROUP', 'XACK', 'XCLAIM', 'XPENDING', 'XGROUP', 'XINFO', 'XADD', 'XRANGE', 'EVALSHA', 'EVAL', 'CLIENT', 'PEXPIRE', 'TIME',
];
/** Commands a `RedisStreamsClient` (emits, requests and their reply stream) cannot work without. */
export const CLIENT_COMMANDS: readonly RedisCommandName[] = ['XADD', 'XREAD', 'XDEL', 'PEXPIRE', 'DEL', 'TIME'];

/**
 * Probes the server in one pipelined round trip: COMMAND INFO for every command the transport may
 * send, and argument probes on a fresh key that does not exist (so nothing is written: XSETID of
 * a missing key fails, XADD … NOMKSTREAM of a missing key adds nothing). Where COMMAND INFO is
 * refused, a second round trip calls the commands bare instead (`probeCommandsBare`).
 */
export async function probeCapabilities(redis: RedisClient): Promise<RedisStreamsCapabilities> {
  // One hash slot for every keyed probe, so a Cluster pipeline stays on one node.
  const key = `{nestjs-redis-streams:capability-probe}:${randomUUID()}`;
  const pipeline = redis.pipeline();
  pipeline.call('COMMAND', ['INFO', ...PROBED_COMMANDS]);
  pipeline.call('XSETID', [key, '0-1', 'ENTRIESADDED', '1', 'MAXDELETEDID', '0-0']);
  pipeline.call('XADD', [key, 'NOMKSTREAM', 'KEEPREF', '*', 'probe', '1']);
  pipeline.call('XADD', [key, 'NOMKSTREAM', 'IDMP', 'probe', 'probe', '*', 'probe', '1']);
  const results = (await pipeline.exec()) ?? [];
  // A reply error is an answer to learn from; anything else (connection lost, timeout) is a failure.
  const failure = results.find(([error]) => error !== null && error !== undefined && error.name !== 'ReplyError')?.[0];
  if (failure) throw failure;
  const [commandInfo, setId, keepRef, idmp] = results.map(([error, reply]) => ({ error: error ?? undefined, reply }));
  const unprobed: (keyof RedisStreamsCapabilities)[] = [];

  const known = new Set<RedisCommandName>();
  const missing: RedisCommandName[] = [];
  // COMMAND INFO refused (an ACL without `command|info`): ask each command itself instead.
  const presence =
    commandInfo !== undefined && commandInfo.error === undefined && Array.isArray(commandInfo.reply)
      ? PROBED_COMMANDS.map((_, index) => (commandInfo.reply as unknown[])[index] !== null && (commandInfo.reply as unknown[])[index] !== undefined)
      : await probeCommandsBare(redis);
  PROBED_COMMANDS.forEach((command, index) => {
    if (presence[index] === true) known.add(command);
    else if (presence[index] === false && !OPTIONAL_COMMANDS.has(command)) missing.push(command);
  });
  const unanswered = PROBED_COMMANDS.filter((_, index) => presence[index] === undefined);
  for (const [capability, command] of COMMAND_CAPABILITIES) if (unanswered.includes(command)) unprobed.push(capability);
  if (unanswered.some((command) => !OPTIONAL_COMMANDS.has(command))) unprobed.push('missingCommands');

  const lagTracking = argumentProbe(setId, (_reply, error) => error?.startsWith('ERR no such key') === true);
  const deletionPolicies = argumentProbe(keepRef, (reply, error) => error === undefined && reply === null);
  const idmpProbe = argumentProbe(idmp, (reply, error) => error === undefined && reply === null);
  if (lagTracking === undefined) unprobed.push('lagTracking');
  if (deletionPolicies === undefined) unprobed.push('deletionPolicies');
  if (idmpProbe === undefined) unprobed.push('idmp');

  return {
    xautoclaim: known.has('XAUTOCLAIM'),
    lagTracking: lagTracking === true,
    deletionPolicies: deletionPolicies === true,
    xackdel: known.has('XACKDEL'),
    xdelex: known.has('XDELEX'),
    idmp: idmpProbe === true,
    xcfgset: known.has('XCFGSET'),
    missingCommands: missing,
    unprobed,
  };
}

/**
 * Whether the server has each probed command, from calling it with no arguments, in one pipelined
 * round trip. Redis (and Valkey) look a command up, then check its arity, and only then its ACL:
 * a bare call answers "unknown command" when the command is absent and "wrong number of arguments"
 * when it is there, runs nothing and needs no permission (TIME, which takes none, just runs).
 * `undefined` where the reply says neither.
 *
 * On a Cluster the calls go to one master: a Cluster client cannot route a keyed command without
 * its key (ioredis throws a TypeError), and a node answers a bare call before it looks at slots.
 * Every node has the same commands.
 */
async function probeCommandsBare(redis: RedisClient): Promise<(boolean | undefined)[]> {
  // Not instanceof: this module must not load ioredis (the CLI's --help loads none).
  const node = isClusterClient(redis) ? redis.nodes('master')[0] : redis;
  if (node === undefined) return PROBED_COMMANDS.map(() => undefined);
  const pipeline = node.pipeline();
  for (const command of PROBED_COMMANDS) pipeline.call(command, []);
  const results = (await pipeline.exec()) ?? [];
  const failure = results.find(([error]) => error !== null && error !== undefined && error.name !== 'ReplyError')?.[0];
  if (failure) throw failure;
  return PROBED_COMMANDS.map((_, index) => {
    const error = results[index]?.[0];
    if (results[index] === undefined) return undefined;
    if (error === null || error === undefined) return true;
    if (/^ERR unknown command/i.test(error.message)) return false;
    if (/wrong number of arguments|^NOPERM/i.test(error.message)) return true;
    return undefined;
  });
}

/**
 * `true` when the reply shows the argument was understood, `false` when the server rejected it
 * as unknown syntax, `undefined` when the reply says neither (NOPERM, READONLY, OOM …).
 */
function argumentProbe(
  result: { error: Error | undefined; reply: unknown } | undefined,
  understood: (reply: unknown, error: string | undefined) => boolean,
): boolean | undefined {
  if (result === undefined) return undefined;
  const message = result.error?.message;
  if (understood(result.reply, message)) return true;
  if (message === undefined) return undefined;
  // Older servers read an unknown word as the entry id, or report the extra arguments.
  if (/syntax error|wrong number of arguments|Invalid stream ID|unknown command/i.test(message)) return false;
  return undefined;
}

/** Throws when the server lacks a command `user` needs, naming the command and the Redis version that has it. */
export function requireCommands(capabilities: RedisStreamsCapabilities, needed: readonly RedisCommandName[], user: string): void {
  const missing = needed.find((command) => capabilities.missingCommands.includes(command));
  if (missing !== undefined) throw new RedisStreamsMissingCommandError(missing, COMMAND_SINCE[missing], user);
}

/**
 * The `ERR unknown command 'xautoclaim'` reply (backquotes on 6.2) of a command the transport
 * knows, as an error naming the Redis version that has it; `undefined` for any other error.
 */
export function missingCommandError(error: unknown, user: string): RedisStreamsMissingCommandError | undefined {
  const message = error instanceof Error ? error.message : '';
  const match = /^ERR unknown command [`']([^`']+)[`']/i.exec(message);
  const command = match?.[1]?.toUpperCase();
  if (command === undefined || !(command in COMMAND_SINCE)) return undefined;
  const name = command as RedisCommandName;
  return new RedisStreamsMissingCommandError(name, COMMAND_SINCE[name], user, { cause: error });
}

/** One line for logs: what the server has, what it lacks. */
export function describeCapabilities(capabilities: RedisStreamsCapabilities): string {
  const flags = (['xautoclaim', 'lagTracking', 'deletionPolicies', 'xackdel', 'xdelex', 'idmp', 'xcfgset'] as const).map(
    (name) => `${name}=${capabilities[name] ? 'yes' : 'no'}`,
  );
  const missing = capabilities.missingCommands.length > 0 ? `; missing commands: ${capabilities.missingCommands.join(', ')}` : '';
  const unprobed = capabilities.unprobed.length > 0 ? `; not probed (refused): ${capabilities.unprobed.join(', ')}` : '';
  return `Redis capabilities: ${flags.join(' ')}${missing}${unprobed}`;
}

/**
 * Keeps one connection's capabilities current: probed once by `start()`, and again after every
 * reconnect (a failover can land on a server of another version). `onProbed` hears each result
 * that differs from the one before (the first included).
 *
 * From the moment the connection is lost until the probe on the next connection answered, the
 * last result may be another server's: `stale` says so, and `current()` waits for that probe
 * (starting it if the `ready` that would have started it has not been heard yet, or it failed).
 */
export class CapabilityWatch {
  private last: RedisStreamsCapabilities | undefined;
  private lost = false;
  /** The probe in flight on the connection open now. */
  private probing: Promise<RedisStreamsCapabilities> | undefined;
  private watching = false;
  private stopped = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly onProbed: (capabilities: RedisStreamsCapabilities) => void,
    private readonly onProbeError: (error: unknown) => void = () => undefined,
  ) {}

  /** The last probe's result (`undefined` before the first). */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.last;
  }

  /** True from a connection loss until the probe on the new connection answered. */
  get stale(): boolean {
    return this.lost;
  }

  /**
   * The capabilities of the server connected now: the last result unless it is stale, else the
   * promise of the re-probe (started here if the `ready` that starts it was not heard yet, or it
   * failed). `undefined` while the connection is not ready: a command sent then fails at once,
   * whatever its words. A value, not a promise, unless there is something to wait for.
   */
  current(): RedisStreamsCapabilities | undefined | Promise<RedisStreamsCapabilities> {
    if (!this.lost) return this.last;
    if (this.probing) return this.probing;
    return this.redis.status === 'ready' ? this.probe() : undefined;
  }

  /** Probes now (rejects when Redis cannot be reached), then re-probes on every later `ready`. */
  async start(): Promise<RedisStreamsCapabilities> {
    const capabilities = await this.probe();
    if (!this.watching && !this.stopped) {
      this.watching = true;
      this.redis.on('close', this.forget);
      this.redis.on('ready', this.reprobe);
    }
    return capabilities;
  }

  stop(): void {
    this.stopped = true;
    if (!this.watching) return;
    this.watching = false;
    this.redis.off('close', this.forget);
    this.redis.off('ready', this.reprobe);
  }

  private probe(): Promise<RedisStreamsCapabilities> {
    const probing: Promise<RedisStreamsCapabilities> = probeCapabilities(this.redis).then(
      (capabilities) => {
        const changed = this.last === undefined || JSON.stringify(this.last) !== JSON.stringify(capabilities);
        this.last = capabilities;
        // Only a probe of the connection open now makes the result current again.
        if (this.probing === probing) {
          this.probing = undefined;
          this.lost = false;
        }
        if (changed) this.onProbed(capabilities);
        return capabilities;
      },
      (error: unknown) => {
        if (this.probing === probing) this.probing = undefined;
        throw error;
      },
    );
    this.probing = probing;
    return probing;
  }

  private readonly forget = (): void => {
    this.lost = true;
    this.probing = undefined;
  };

  private readonly reprobe = (): void => {
    // current() may have started it already (an emit between the status change and this event).
    (this.probing ?? this.probe()).catch(this.onProbeError);
  };
}
