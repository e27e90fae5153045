import { errorMessage } from '../error-message.js';
import type { RedisClient } from '../redis/connection.js';

/** Creates `group` on `stream` (and the stream) at `startId`; false when it already existed (BUSYGROUP). */
export async function createGroup(client: RedisClient, stream: string, group: string, startId: string): Promise<boolean> {
  try {
    await client.xgroup('CREATE', stream, group, startId, 'MKSTREAM');
    return true;
  } catch (error) {
    if (errorMessage(error).startsWith('BUSYGROUP')) return false;
    throw error;
  }
}

/** The stream or the group is gone (Redis restarted without persistence, FLUSHALL, XGROUP DESTROY). */
export function isNoGroupError(error: unknown): boolean {
  return errorMessage(error).startsWith('NOGROUP');
}
