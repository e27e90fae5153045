import type { EventEmitter } from 'node:events';
import { Cluster, type Redis } from './ioredis.js';

type ConnectFn = (...args: unknown[]) => Promise<unknown>;

/**
 * Keeps one `error` listener on every socket ioredis opens for a connection we own, so an error
 * the socket emits after the first one is absorbed instead of crashing the process.
 *
 * Why: ioredis 6 listens to a socket's errors with `once('error')` (its connector and its connect
 * step), so a socket that errors twice throws the second error as an uncaught exception. A TLS
 * handshake does that: the certificate check fails (the first error, which ioredis reports and
 * reconnects on), then the peer's alert arrives (`tlsv1 alert decode error`) on the same socket.
 * The first error still reaches ioredis as before; only the later ones, which ioredis would not
 * have heard anyway, land here.
 *
 * Private fields (ioredis 6 internals: `connector.connect`, resolving the socket): if a later
 * ioredis changes them, this does nothing instead of failing.
 */
export function absorbLateSocketErrors(client: Redis | Cluster): void {
  if (client instanceof Cluster) {
    // A Cluster makes one Redis per node as it discovers them.
    client.on('+node', (node: Redis) => guardConnector(node));
    return;
  }
  guardConnector(client);
}

function guardConnector(client: Redis): void {
  const connector = (client as unknown as { connector?: unknown }).connector;
  if (connector === null || typeof connector !== 'object') return;
  const holder = connector as { connect?: unknown; lateSocketErrorsGuarded?: boolean };
  if (typeof holder.connect !== 'function' || holder.lateSocketErrorsGuarded) return;
  const connect = (holder.connect as ConnectFn).bind(connector);
  holder.connect = async (...args: unknown[]) => {
    const stream = await connect(...args);
    if (isEmitter(stream)) stream.on('error', ignoreLateError);
    return stream;
  };
  holder.lateSocketErrorsGuarded = true;
}

function isEmitter(value: unknown): value is EventEmitter {
  return value !== null && typeof value === 'object' && typeof (value as { on?: unknown }).on === 'function';
}

function ignoreLateError(): void {
  // ioredis' own once-listener took the first error; later ones on a failed socket change nothing.
}
