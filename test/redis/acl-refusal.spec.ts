import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { aclRefusal, isNoPermission } from '../../src/redis/acl-refusal.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The replies a real server gives (6.2 names the command only, 7+ the subcommand), read by the one decision. */
describe('aclRefusal: is a reply an ACL refusal, and which rule does it ask for', () => {
  const redis = useRedisServer();

  async function failureAs(rules: string[], ...command: string[]): Promise<Error> {
    await redis.client.call('ACL', 'SETUSER', 'narrow', 'reset', 'on', '>narrow-pw', '+hello', '+auth', '+client|setname', '~*', ...rules);
    // ioredis' own handshake extras (CLIENT SETINFO…) may be refused here: it goes on without them.
    const narrow = new Redis(`redis://narrow:narrow-pw@127.0.0.1:${redis.server.port}`);
    try {
      return await narrow.call(command[0]!, ...command.slice(1)).then(
        () => {
          throw new Error(`${command.join(' ')} was not refused`);
        },
        (error: unknown) => error as Error,
      );
    } finally {
      narrow.disconnect();
    }
  }

  it('a refused CLUSTER SLOTS names +cluster|slots and the user', async () => {
    const refused = await failureAs(['+get'], 'CLUSTER', 'SLOTS');
    expect(refused.message).toMatch(/^NOPERM/);
    expect(aclRefusal(refused, ['cluster', 'slots'], 'narrow')).toBe('the ACL user "narrow" may not run CLUSTER SLOTS: add +cluster|slots (docs/security.md)');
  });

  it('a refused command without subcommands names its own rule; no user means "default"', async () => {
    const refused = await failureAs(['+get'], 'XADD', 's', '*', 'f', 'v');
    expect(aclRefusal(refused, ['xadd'], undefined)).toBe('the ACL user "default" may not run XADD: add +xadd (docs/security.md)');
  });

  it('any other error is no refusal', async () => {
    await redis.client.set('a-string', '1');
    const wrongType = await failureAs(['+xadd'], 'XADD', 'a-string', '*', 'f', 'v');
    expect(wrongType.message).toMatch(/^WRONGTYPE/);
    expect(aclRefusal(wrongType, ['xadd'], 'narrow')).toBeUndefined();
    expect(aclRefusal(new Error('connect ECONNREFUSED 127.0.0.1:1'), ['cluster', 'slots'], 'narrow')).toBeUndefined();
    expect(aclRefusal(undefined, ['cluster', 'slots'], 'narrow')).toBeUndefined();
  });

  it('isNoPermission: a refused command or key; no other error', async () => {
    expect(isNoPermission(await failureAs(['+get'], 'XADD', 's', '*', 'f', 'v'))).toBe(true);
    expect(isNoPermission(await failureAs(['+get', 'resetkeys', '~allowed'], 'GET', 'other'))).toBe(true);
    await redis.client.set('a-string', '1');
    expect(isNoPermission(await failureAs(['+xadd'], 'XADD', 'a-string', '*', 'f', 'v'))).toBe(false);
    expect(isNoPermission(new Error('ERR unknown command'))).toBe(false);
    expect(isNoPermission(undefined)).toBe(false);
  });
});
