/**
 * The lease thread (a worker_threads Worker, started by lease-thread-handle.ts): a watchdog that
 * keeps this process's leases while a handler blocks the main event loop. While the main thread's
 * heartbeat is fresh it does nothing but read it (the main thread renews its leases itself). Once
 * the heartbeat is stale, it renews, each lease interval, every entry Redis lists as pending for
 * this consumer (lease-thread-renewal.ts): what the handlers hold, and what a read answered during
 * the block delivered to a reply not yet read. Once the heartbeat is older than `maxBlocked` it
 * renews nothing (a wedged process gives its work back) until the heartbeat moves again.
 *
 * It starts with no Redis module loaded and no connection: it loads them and connects at the first
 * stale heartbeat, or earlier when the main thread says an entry has been in flight for a lease
 * interval (`connect`), or at start when the lease interval is too short to connect within a block
 * (`connectsAtStart`, docs/recovery.md, "Leases").
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorMessage } from '../error-message.js';
import type { LeaseRenewal } from './lease-thread-renewal.js';
import { connectsAtStart, heartbeatInterval, staleAfter, type FromLeaseThread, type LeaseThreadData, type ToLeaseThread } from './lease-thread-protocol.js';

const data = workerData as LeaseThreadData;
const port = parentPort as NonNullable<typeof parentPort>;
const heartbeat = new Float64Array(data.heartbeat);
const checkEvery = heartbeatInterval(data.interval, data.maxBlocked);
const stale = staleAfter(data.interval, data.maxBlocked);

let renewal: Promise<LeaseRenewal> | undefined;
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

/** The Redis side, loaded on first use; a load that failed is tried again at the next need. */
function renewalSide(): Promise<LeaseRenewal> {
  renewal ??= import('./lease-thread-renewal.js').then(
    ({ LeaseRenewal }) => new LeaseRenewal(data, send),
    (error: unknown) => {
      renewal = undefined;
      throw new Error(`lease renewal could not load its Redis side (lease-thread-renewal.js): ${errorMessage(error)}`);
    },
  );
  return renewal;
}

/** The Redis side, or `undefined` when it could not be loaded: reported like a failed renewal (a rejection left unhandled would end the thread). */
async function loadedSide(): Promise<LeaseRenewal | undefined> {
  try {
    return await renewalSide();
  } catch (error) {
    if (!stopping) send({ type: 'error', message: errorMessage(error) });
    return undefined;
  }
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
    running = renew().finally(() => (running = undefined));
  }
  schedule(checkEvery);
}

async function renew(): Promise<void> {
  const side = await loadedSide();
  if (side !== undefined) lastRenewed = await side.round(() => stopping);
}

function schedule(ms: number): void {
  timer = setTimeout(watch, ms);
}

/** Connects ahead of a block (the main thread has an entry in flight for a lease interval); a failure is reported, the next round tries again. */
async function connectAhead(): Promise<void> {
  const side = await loadedSide();
  if (side === undefined) return;
  try {
    await side.connect();
  } catch (error) {
    if (!stopping) send({ type: 'error', message: `lease renewal could not connect: ${errorMessage(error)}` });
  }
}

async function stop(): Promise<void> {
  stopping = true;
  clearTimeout(timer);
  // A load that failed was reported already; there is nothing to close then.
  const side = await renewal?.catch(() => undefined);
  // A connect under way is cut short; a round on a ready connection finishes first.
  if (side !== undefined && !side.connected) await side.close();
  await running;
  await side?.close();
  send({ type: 'stopped' });
  port.close();
}

port.on('message', (message: ToLeaseThread) => {
  if (message.type === 'stop') void stop();
  else if (message.type === 'connect' && !stopping) void connectAhead();
});

/** With a short lease interval: connects first (the thread ends if it cannot), then watches. */
async function connectFirst(): Promise<void> {
  try {
    await (await renewalSide()).connect();
  } catch (error) {
    if (stopping) return;
    send({ type: 'failed', message: errorMessage(error) });
    port.close();
    return;
  }
  if (stopping) return;
  send({ type: 'ready' });
  watch();
}

if (connectsAtStart(data.interval)) void connectFirst();
else {
  send({ type: 'ready' });
  watch();
}
