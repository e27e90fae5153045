/**
 * The lease thread (a worker_threads Worker, started by lease-thread-handle.ts): it renews the
 * leases of the entries its process holds on a connection and a timer of its own, so a handler
 * that blocks the main event loop does not make them look idle. Owner-checked renewals
 * (leases.ts), batched per stream + group as on the main thread. Once the main thread's
 * heartbeat is older than `maxBlocked` it renews nothing (a wedged process gives its work back)
 * until the heartbeat moves again.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorMessage } from '../error-message.js';
import { closeConnection, describeConnection, openConnection, type OpenedConnection } from '../redis/connection.js';
import { whenReady } from '../redis/ready.js';
import { reviveThreadConnection } from '../redis/thread-connection.js';
import { renewLeases } from './leases.js';
import type { FromLeaseThread, HeldEntries, LeaseThreadData, ToLeaseThread } from './lease-thread-protocol.js';

const data = workerData as LeaseThreadData;
const port = parentPort as NonNullable<typeof parentPort>;
const heartbeat = new Float64Array(data.heartbeat);
/** stream NUL group → what is held there. */
const held = new Map<string, { stream: string; group: string; ids: Set<string> }>();
let opened: OpenedConnection | undefined;
let ready = false;
let stopping = false;
let running: Promise<void> | undefined;
/** A snapshot arrived while a renewal ran: renew again once it is done. */
let again = false;
let lastRenewal = Date.now();
let gaveUp = false;
/** When the main thread last said what it holds: what Redis delivered after that, this thread has not been told of. */
let lastHeard = Date.now();
/** Most entries adopted per stream + group and renewal (one XPENDING page). */
const ADOPT_PAGE = 1000;

function send(message: FromLeaseThread): void {
  port.postMessage(message);
}

function replace(snapshot: readonly HeldEntries[]): void {
  held.clear();
  for (const [stream, group, ids] of snapshot) held.set(`${stream}\u0000${group}`, { stream, group, ids: new Set(ids) });
}

function add(stream: string, group: string, ids: readonly string[]): void {
  const key = `${stream}\u0000${group}`;
  let entry = held.get(key);
  if (entry === undefined) held.set(key, (entry = { stream, group, ids: new Set() }));
  for (const id of ids) entry.ids.add(id);
}

function renewSoon(): void {
  if (!ready || stopping) return;
  if (running !== undefined) {
    again = true;
    return;
  }
  running = renewAll().finally(() => {
    running = undefined;
    if (again) {
      again = false;
      renewSoon();
    }
  });
}

async function renewAll(): Promise<void> {
  lastRenewal = Date.now();
  const client = (opened as OpenedConnection).client;
  if (lastRenewal - lastHeard > data.interval * 1.25) await adoptUnannounced(client);
  // A snapshot arriving meanwhile replaces the map (this loop then ends) and asks for another round.
  for (const { stream, group, ids } of held.values()) {
    if (ids.size === 0 || stopping) continue;
    try {
      const { renewed, lost } = await renewLeases(client, { stream, group, consumer: data.consumer, ids: [...ids] });
      if (renewed.length > 0) send({ type: 'renewed', count: renewed.length });
      if (lost.length === 0) continue;
      // Never ours again: the main thread decides what to report.
      for (const lease of lost) ids.delete(lease.id);
      send({ type: 'lost', stream, group, leases: lost });
    } catch (error) {
      send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") failed: ${errorMessage(error)}` });
    }
  }
}

/**
 * While the main thread is late, it may not have read a reply Redis already answered: a blocking
 * read that returned while a handler blocked the event loop. Those entries are pending for this
 * consumer and their idle time runs, but no thread knows them. Entries of this consumer delivered
 * since the main thread last spoke (with one lease interval of slack: a reply is read a moment after
 * Redis sends it) are renewed too, until the main thread's next snapshot says what it holds.
 */
async function adoptUnannounced(client: OpenedConnection['client']): Promise<void> {
  const silentMs = Date.now() - lastHeard + data.interval;
  for (const { stream, group, ids } of held.values()) {
    if (stopping) return;
    try {
      const rows = (await client.call('XPENDING', stream, group, '-', '+', ADOPT_PAGE, data.consumer)) as [string, string, number, number][];
      for (const [id, , idle] of rows) if (Number(idle) < silentMs) ids.add(String(id));
    } catch (error) {
      send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") could not list its pending entries: ${errorMessage(error)}` });
    }
  }
}

/** The main thread's snapshots drive renewals while it lives; this timer covers for it when they are late. */
function onTimer(): void {
  const now = Date.now();
  if (now - lastRenewal < data.interval * 1.25) return;
  const blockedMs = now - (heartbeat[0] as number);
  if (blockedMs > data.maxBlocked) {
    if (!gaveUp) {
      gaveUp = true;
      let entries = 0;
      for (const { ids } of held.values()) entries += ids.size;
      send({ type: 'gaveUp', entries, blockedMs });
    }
    return;
  }
  gaveUp = false;
  renewSoon();
}

async function stop(): Promise<void> {
  stopping = true;
  clearInterval(timer);
  await running;
  await closeConnection(opened);
  send({ type: 'stopped' });
  port.close();
}

port.on('message', (message: ToLeaseThread) => {
  if (message.type !== 'stop') lastHeard = Date.now();
  if (message.type === 'held') {
    replace(message.held);
    gaveUp = false;
    renewSoon();
  } else if (message.type === 'started') add(message.stream, message.group, message.ids);
  else if (message.type === 'stop') void stop();
});

const timer = setInterval(onTimer, Math.max(1, Math.floor(data.interval / 4)));

async function connect(): Promise<void> {
  const connection = reviveThreadConnection(data.connection);
  opened = openConnection(connection, 'lease-renewal');
  // Reconnects are reported by the failed renewals; the status events need no listener here.
  opened.client.on('error', () => undefined);
  try {
    await whenReady(opened.client, data.connectTimeout, describeConnection(connection));
  } catch (error) {
    if (stopping) return;
    await closeConnection(opened);
    clearInterval(timer);
    send({ type: 'failed', message: errorMessage(error) });
    port.close();
    return;
  }
  if (stopping) return;
  ready = true;
  send({ type: 'ready' });
  // The main thread answers 'ready' with a snapshot, which this renews; the ids admitted meanwhile
  // (mostly settled already) wait for it, or for the timer if the main thread is late.
}

void connect();
