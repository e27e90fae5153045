import type { Cluster, Command, Redis } from 'ioredis';
import { startTimeoutVerdict } from '../timeout.js';

/**
 * ioredis' `commandTimeout` rejects a command with "Command timed out" from a plain timer. After a
 * long event-loop stall (a synchronous burst of work right after a command was written) that timer
 * runs before the socket is read, so a reply Redis sent in time is reported as a timeout (and an
 * XADD that was written is reported as failed). This routes each command's timeout through
 * `startTimeoutVerdict`, which gives pending replies one turn of the event loop first. The option
 * itself stays ioredis' (it decides which commands get a timeout, and for how long).
 */
export function judgeCommandTimeoutsAfterReads<T extends Redis | Cluster>(client: T): T {
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  const sendCommand = (command: Command, ...rest: unknown[]): unknown => {
    deferTimeoutVerdict(command);
    return send(command, ...rest);
  };
  (client as unknown as { sendCommand: typeof sendCommand }).sendCommand = sendCommand;
  return client;
}

const deferred = new WeakSet<Command>();

function deferTimeoutVerdict(command: Command): void {
  // A Cluster hands the same command to a node client (and may resend it): arm it once.
  if (deferred.has(command)) return;
  deferred.add(command);
  let deadline: number | undefined;
  let armed = false;
  command.setTimeout = (ms: number): void => {
    // Sent again: the first deadline holds, as in ioredis. A Cluster pipeline sent again after
    // MOVED / ASK / TRYAGAIN / CLUSTERDOWN gives the command a fresh promise once the first one
    // was rejected (which disarmed the timer): armed again for what is left of that deadline,
    // or the re-sent XADD had no timeout at all.
    if (armed) return;
    armed = true;
    deadline ??= Date.now() + ms;
    const cancel = startTimeoutVerdict(() => {
      if (!command.isSettled) command.reject(new Error('Command timed out'));
    }, Math.max(0, deadline - Date.now()));
    const disarm = (): void => {
      armed = false;
      cancel();
    };
    void command.promise.then(disarm, disarm);
  };
}
