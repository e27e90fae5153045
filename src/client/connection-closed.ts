/**
 * What a call fails with once the client was closed: requests still waiting for their reply, and
 * emits or checks that were waiting for a retry, so nothing is sent after `close()`. Its own class
 * only so that retries can tell it from a failure worth retrying; callers see the message.
 */
export class ConnectionClosedError extends Error {
  constructor() {
    super('Connection closed');
  }
}
