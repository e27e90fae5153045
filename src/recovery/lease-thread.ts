/**
 * The lease thread (a worker_threads Worker, started by lease-thread-handle.ts): a watchdog that
 * keeps this process's leases while a handler blocks the main event loop. While the main thread's
 * heartbeat is fresh it does nothing but read it (the main thread renews its leases itself). Once
 * the heartbeat is stale, it renews, each lease interval, every entry Redis lists as pending for
 * this consumer (XPENDING … consumer, paged) with the owner-checked renewal of leases.ts: what the
 * handlers hold, and what a read answered during the block delivered to a reply not yet read.
 * Once the heartbeat is older than `maxBlocked` it renews nothing (a wedged process gives its work
 * back) until the heartbeat moves again.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorMessage } from '../error-message.js';
import { closeConnection, describeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { whenReady } from '../redis/ready.js';
import { reviveThreadConnection } from '../redis/thread-connection.js';
import { renewLeases } from './leases.js';
import { heartbeatInterval, staleAfter, type FromLeaseThread, type LeaseThreadData, type ToLeaseThread } from './lease-thread-protocol.js';

const data = workerData as LeaseThreadData;
const port = parentPort as NonNullable<typeof parentPort>;
const heartbeat = new Float64Array(data.heartbeat);
const checkEvery = heartbeatInterval(data.interval, data.maxBlocked);
const stale = staleAfter(data.interval, data.maxBlocked);
/** Pending entries listed per XPENDING call. */
const PAGE = 1000;

let opened: OpenedConnection | undefined;
let stopping = false;
let timer: NodeJS.Timeout | undefined;
let running: Promise<void> | undefined;
/** When this thread last started renewing; 0 while the main thread renews. */
let lastRound = 0;
/** Entries the last renewal renewed (what a give-up leaves to other workers). */
let lastRenewed = 0;
let gaveUp = false;

function send(message: FromLeaseThread): void {
  port.postMessage(message);
}

/** Reads the heartbeat: sleeps until it could be stale while it is fresh, renews each interval while it is stale. */
function watch(): void {
  if (stopping) return;
  const now = Date.now();
  const age = now - (heartbeat[0] as number);
  if (age <= stale) {
    lastRound = 0;
    gaveUp = false;
    return schedule(stale - age + 1);
  }
  if (age > data.maxBlocked) {
    if (!gaveUp) {
      gaveUp = true;
      send({ type: 'gaveUp', entries: lastRenewed, blockedMs: age });
    }
  } else if (running === undefined && now - lastRound >= data.interval) {
    lastRound = now;
    running = renewPending((opened as OpenedConnection).client).finally(() => (running = undefined));
  }
  schedule(checkEvery);
}

function schedule(ms: number): void {
  timer = setTimeout(watch, ms);
}

/** One round: every entry pending for this consumer, per stream + group, renewed page by page. */
async function renewPending(client: RedisClient): Promise<void> {
  let renewedNow = 0;
  for (const [stream, group] of data.streams) {
    let start = '-';
    while (!stopping) {
      let ids: string[];
      try {
        const rows = (await client.call('XPENDING', stream, group, start, '+', PAGE, data.consumer)) as Array<[string, ...unknown[]]>;
        ids = rows.map(([id]) => String(id));
      } catch (error) {
        send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") could not list its pending entries: ${errorMessage(error)}` });
        break;
      }
      if (ids.length === 0) break;
      try {
        const { renewed, lost } = await renewLeases(client, { stream, group, consumer: data.consumer, ids });
        renewedNow += renewed.length;
        if (renewed.length > 0) send({ type: 'renewed', count: renewed.length });
        // The main thread decides what to report (what it still works on).
        if (lost.length > 0) send({ type: 'lost', stream, group, leases: lost });
      } catch (error) {
        send({ type: 'error', message: `lease renewal on "${stream}" (group "${group}") failed: ${errorMessage(error)}` });
        break;
      }
      if (ids.length < PAGE) break;
      start = `(${ids[ids.length - 1] as string}`;
    }
  }
  lastRenewed = renewedNow;
}

async function stop(): Promise<void> {
  stopping = true;
  clearTimeout(timer);
  await running;
  await closeConnection(opened);
  send({ type: 'stopped' });
  port.close();
}

port.on('message', (message: ToLeaseThread) => {
  if (message.type === 'stop') void stop();
});

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
    send({ type: 'failed', message: errorMessage(error) });
    port.close();
    return;
  }
  if (stopping) return;
  send({ type: 'ready' });
  watch();
}

void connect();
