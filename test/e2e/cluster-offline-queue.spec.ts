import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Cluster } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';

/** A TCP relay to one node whose replies (node → client) can be slowed down: a slow link. */
interface SlowLink {
  readonly port: number;
  /** Delay of every reply chunk from now on (only ever raised: chunks stay in order). */
  delayMs: number;
  close(): Promise<void>;
}

async function slowLinkTo(targetPort: number): Promise<SlowLink> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (link.delayMs === 0) client.write(chunk);
      else setTimeout(() => client.write(chunk), link.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const link: SlowLink = {
    port: typeof address === 'object' && address ? address.port : 0,
    delayMs: 0,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return link;
}

/**
 * A Cluster routes a command for a node whose connection is not ready yet (a master it connects
 * to again) into that node connection's own offline queue. An XADD can time out there, fail its
 * emit, and, unless dropped, still be written once the connection is ready: an entry the caller
 * was told was not written.
 */
describe('Cluster node connections: an XADD that timed out in a node queue is not written later', () => {
  // No replicas: every master keeps its slots.
  const harness = useRedisCluster({ replicas: 0 });
  const closers: (() => Promise<void>)[] = [];

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('the emit fails (commandTimeout) and its entry is not in the stream once the node answers', async () => {
    const { cluster: nodes } = harness;
    const stream = 'orders';
    const master = await nodes.masterOf(hashSlotOf(stream));
    const link = await slowLinkTo(master.port);
    closers.push(() => link.close());
    const others = nodes.nodes.filter((node) => node !== master).map((node) => node.url);
    const client = new RedisStreamsClient({
      connection: { cluster: { nodes: others, options: { natMap: { [`127.0.0.1:${master.port}`]: { host: '127.0.0.1', port: link.port } } } } },
      commandTimeout: 500,
    });
    closers.push(() => client.close());
    client.on('error', () => undefined);
    // On a loaded host the capability probe, handshakes included, can outlast the 500 ms: a failed connect is retried by the next.
    await waitFor(() => client.connect().then(() => true, () => false), 'the client to connect', { timeout: 20_000, interval: 100 });
    const cluster = client.unwrap<Cluster>();
    const connectionToMaster = () => cluster.nodes('master').find((node) => node.options.port === link.port);
    // The master's connection is ready before the first emit, awaited without the 500 ms
    // commandTimeout: an XADD sent while it connects waits for its handshake in the node's queue,
    // and on a loaded host timed out there (in CI: 'before' failed, not the XADD under test).
    const first = connectionToMaster();
    expect(first).toBeDefined();
    if (first!.status === 'wait') void first!.connect().catch(() => undefined);
    await waitFor(() => first!.status === 'ready', 'the first connection to the master to be ready');
    await lastValueFrom(client.emit(stream, 'before')); // the pattern's check is done, on a fast link

    // From now on every reply of that master takes 300 ms: a new connection's handshake (HELLO …,
    // then INFO) is ready after ~600 ms, past the 500 ms commandTimeout of an XADD queued meanwhile.
    link.delayMs = 300;
    const admin = master.client();
    closers.push(async () => admin.disconnect());
    const producerConnection = /^id=(\d+) .*name=nestjs-redis-streams:client /m.exec(String(await admin.client('LIST')));
    expect(producerConnection).not.toBeNull();
    // The client's connection to that master ends: the next command for it makes a new one.
    await admin.client('KILL', 'ID', producerConnection![1]!);
    await waitFor(() => connectionToMaster() !== first, 'the connection to the master to end');
    // Made again, not connected yet (a slots refresh puts the master back in the pool): the XADD
    // goes to it and waits in the new connection's queue. While the master is missing from the
    // pool, ioredis sends the XADD to another master and follows its MOVED answers, which a
    // pipeline (auto-pipelining) does not map through natMap: a run of them can use up the
    // redirections before a refresh ends ("Too many Cluster redirections", seen on a loaded host).
    cluster.refreshSlotsCache();
    // Not ready yet: anything routed to it meanwhile only starts its ~600 ms handshake.
    await waitFor(() => ['wait', 'connecting', 'connect'].includes(connectionToMaster()?.status ?? ''), 'the master to be back in the pool, not connected');

    const failure = await lastValueFrom(client.emit(stream, 'timed out')).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(/Redis did not answer within commandTimeout/);

    // Once the connection is ready an emit goes through (300 ms < 500 ms); what that connection
    // had queued was written before it.
    await waitFor(
      () =>
        lastValueFrom(client.emit(stream, 'after')).then(
          () => true,
          () => false,
        ),
      'an emit over the slow link to succeed',
      { timeout: 10_000, interval: 100 },
    );
    const payloads = ((await admin.xrange(stream, '-', '+')) as [string, string[]][]).map(([, fields]) => JSON.parse(fields[3]!) as string);
    expect(payloads.filter((payload) => payload !== 'after')).toEqual(['before']);
  }, 60_000);
});
