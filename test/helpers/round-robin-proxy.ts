import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A load balancer without sticky sessions, on a free loopback port: each request goes to the
 * next upstream in turn, GETs and POSTs counted apart (so that two POSTs in a row reach two
 * replicas whatever the page's polls do). The Host header is passed on as the browser sent it.
 */
export class RoundRobinProxy {
  /** Per upstream (by index), the `METHOD path` of every request it was sent. */
  readonly seen: string[][];
  private readonly turns = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>` of each replica; replace it to send everything elsewhere. */
    public upstreams: string[],
  ) {
    this.seen = upstreams.map(() => []);
  }

  static async start(upstreams: string[]): Promise<RoundRobinProxy> {
    let proxy: RoundRobinProxy | undefined;
    const server = createServer((incoming, outgoing) => {
      const index = proxy!.next(incoming.method ?? 'GET');
      proxy!.seen[index]?.push(`${incoming.method} ${incoming.url?.split('?')[0]}`);
      const forwarded = request(`${proxy!.upstreams[index]}${incoming.url}`, { method: incoming.method, headers: incoming.headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      forwarded.on('error', () => outgoing.destroy());
      incoming.pipe(forwarded);
    });
    proxy = new RoundRobinProxy(server, upstreams);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `http://127.0.0.1:<port>` */
  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private next(method: string): number {
    const turn = this.turns.get(method) ?? 0;
    this.turns.set(method, turn + 1);
    return turn % this.upstreams.length;
  }
}
