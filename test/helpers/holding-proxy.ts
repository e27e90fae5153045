import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

interface Link {
  readonly client: Socket;
  upstream: Socket | undefined;
  /** The name the client gave itself (CLIENT SETNAME in its handshake), once seen. */
  name: string | undefined;
  /** What the client sent before its name was seen (searched for CLIENT SETNAME). */
  head: string;
  /** What the client sent while frozen or held: not forwarded (yet). */
  readonly held: Buffer[];
  frozen: boolean;
  /** Redis' replies are lost (what the client sends still reaches Redis). */
  muted: boolean;
  /** The link closes when the client sends this command (before Redis sees it). */
  dropOn: string | undefined;
  /** The next time the client sends this command, Redis answers `error` in its stead (in order: see `failNext`). */
  answerOn: { readonly command: string; readonly error: string } | undefined;
}

/**
 * A TCP proxy in front of one Redis on a free loopback port, to fail one connection of a client
 * while its others stay up. Connections are known by the name they give themselves (CLIENT
 * SETNAME). `freeze(name)` keeps what such a connection sends from Redis (as a link that stopped
 * carrying), `thaw(name)` sends it on; `muteReplies(name)` lets its commands run but loses their
 * replies (Redis did it, the client never hears); `dropAndHold(name)` closes it, and holds every
 * new connection (accepted, nothing forwarded: the client sees its handshake unanswered, as while
 * Redis restarts) until `release()`; `dropOnCommand(name, command)` closes such a connection as it
 * sends that command (a restart cutting exactly that call); `failNext(name, command, error)` answers
 * that command once with a reply error in Redis' stead (a restarted Redis still loading its data).
 */
export class HoldingProxy {
  private readonly links = new Set<Link>();
  private holding: Link[] | undefined;
  /** Connections closed by `dropOnCommand` so far. */
  cut = 0;
  /** Commands answered by `failNext` so far. */
  failed = 0;

  private constructor(
    private readonly server: Server,
    private readonly upstreamPort: number,
  ) {}

  static async start(upstreamPort: number): Promise<HoldingProxy> {
    let proxy: HoldingProxy | undefined;
    const server = createServer((client) => proxy!.accept(client));
    proxy = new HoldingProxy(server, upstreamPort);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Connections named `name` stop carrying what their client sends (it piles up here, see `heldText`). */
  freeze(name: string): void {
    for (const link of this.named(name)) link.frozen = true;
  }

  /** What connections named `name` sent and the proxy kept from Redis. */
  heldText(name: string): string {
    return this.named(name)
      .map((link) => Buffer.concat(link.held).toString())
      .join('');
  }

  /** Connections named `name` carry what their client sends again, first what they kept while frozen. */
  thaw(name: string): void {
    for (const link of this.named(name)) {
      link.frozen = false;
      if (link.upstream !== undefined) for (const chunk of link.held.splice(0)) link.upstream.write(chunk);
    }
  }

  /** Redis' replies to connections named `name` are lost from now on; what they send still runs. */
  muteReplies(name: string): void {
    for (const link of this.named(name)) link.muted = true;
  }

  /** The connections named `name` close as they next send `command` (it never reaches Redis); new connections go through. */
  dropOnCommand(name: string, command: string): void {
    for (const link of this.named(name)) link.dropOn = command;
  }

  /**
   * The next `command` a connection named `name` sends is answered `-<error>` and never runs: it is
   * swapped for a script that answers that error, so the reply comes in its place among the
   * replies of the commands sent before and with it (answered by the proxy at once, it overtook
   * them, and ioredis gave each reply to the wrong command from then on).
   */
  failNext(name: string, command: string, error: string): void {
    for (const link of this.named(name)) link.answerOn = { command, error };
  }

  /** Closes the connections named `name` (what they held is lost) and holds every new connection until `release()`. */
  dropAndHold(name: string): number {
    this.holding ??= [];
    const dropped = this.named(name);
    for (const link of dropped) this.end(link);
    return dropped.length;
  }

  /** How many new connections wait for `release()`. */
  get held(): number {
    return this.holding?.length ?? 0;
  }

  /** Connects the held connections to Redis, with what they sent meanwhile; new ones go through again. */
  release(): void {
    const held = this.holding ?? [];
    this.holding = undefined;
    for (const link of held) if (!link.client.destroyed) this.forward(link);
  }

  async close(): Promise<void> {
    this.holding = undefined;
    for (const link of this.links) this.end(link);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private named(name: string): Link[] {
    return [...this.links].filter((link) => link.name === name);
  }

  private accept(client: Socket): void {
    const link: Link = { client, upstream: undefined, name: undefined, head: '', held: [], frozen: false, muted: false, dropOn: undefined, answerOn: undefined };
    this.links.add(link);
    client.on('data', (chunk: Buffer) => {
      if (link.name === undefined) {
        link.head += chunk.toString('latin1');
        link.name = /setname\r\n\$\d+\r\n([^\r]*)\r\n/i.exec(link.head)?.[1];
      }
      if (link.dropOn !== undefined && sendsCommand(chunk, link.dropOn)) {
        this.cut++;
        return this.end(link);
      }
      if (link.answerOn !== undefined && sendsCommand(chunk, link.answerOn.command)) chunk = this.swapAnswered(link, chunk);
      if (link.frozen || link.upstream === undefined) link.held.push(chunk);
      else link.upstream.write(chunk);
    });
    client.on('error', () => this.end(link));
    client.on('close', () => this.end(link));
    if (this.holding !== undefined) this.holding.push(link);
    else this.forward(link);
  }

  /** `chunk` with the command `failNext` named swapped for one that answers its error (the others as they were). */
  private swapAnswered(link: Link, chunk: Buffer): Buffer {
    const commands = splitCommands(chunk);
    if (commands === undefined) throw new Error(`HoldingProxy.failNext: a chunk that is not whole RESP commands: ${JSON.stringify(chunk.toString('latin1'))}`);
    return Buffer.concat(
      commands.map((command) => {
        const answerOn = link.answerOn;
        if (answerOn === undefined || !sendsCommand(command, answerOn.command)) return command;
        link.answerOn = undefined;
        this.failed++;
        return respCommand(['EVAL', 'return redis.error_reply(ARGV[1])', '0', answerOn.error]);
      }),
    );
  }

  private forward(link: Link): void {
    const upstream = connect(this.upstreamPort, '127.0.0.1');
    link.upstream = upstream;
    for (const chunk of link.held.splice(0)) upstream.write(chunk);
    upstream.on('data', (chunk: Buffer) => {
      if (!link.muted) link.client.write(chunk);
    });
    upstream.on('error', () => this.end(link));
    upstream.on('close', () => this.end(link));
  }

  private end(link: Link): void {
    if (!this.links.delete(link)) return;
    link.client.destroy();
    link.upstream?.destroy();
  }
}

/** Whether `chunk` holds a RESP command named `command` (its name as an array's first bulk string). */
function sendsCommand(chunk: Buffer, command: string): boolean {
  return new RegExp(`\\*\\d+\\r\\n\\$${command.length}\\r\\n${command}\\r\\n`, 'i').test(chunk.toString('latin1'));
}

/** The RESP commands (arrays of bulk strings) `chunk` holds, each whole; undefined when it ends inside one. */
function splitCommands(chunk: Buffer): Buffer[] | undefined {
  const commands: Buffer[] = [];
  let at = 0;
  const lineEnd = (from: number): number => chunk.indexOf('\r\n', from, 'latin1');
  while (at < chunk.length) {
    const start = at;
    const headerEnd = lineEnd(at);
    if (chunk[at] !== 0x2a || headerEnd === -1) return undefined; // '*'
    let parts = Number(chunk.toString('latin1', at + 1, headerEnd));
    at = headerEnd + 2;
    for (; parts > 0; parts--) {
      const lengthEnd = lineEnd(at);
      if (chunk[at] !== 0x24 || lengthEnd === -1) return undefined; // '$'
      at = lengthEnd + 2 + Number(chunk.toString('latin1', at + 1, lengthEnd)) + 2;
      if (at > chunk.length) return undefined;
    }
    commands.push(chunk.subarray(start, at));
  }
  return commands;
}

function respCommand(args: readonly string[]): Buffer {
  return Buffer.from(`*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`);
}
