import { RedisStreamsOptionError } from '../errors.js';
import { warnDeprecatedOnce } from '../deprecation.js';
import type { DeadLetterKeySetting } from '../recovery/dead-letter-key-option.js';
import type { RecoveryOptions } from '../recovery/recovery-options.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';

/**
 * The module's one dead-letter key setting: `deadLetters.deadLetterKey`, read by `DeadLetterService`
 * and by every server `RedisStreamsServerFactory` builds. The older `server.recovery.deadLetterKey`
 * still works (deprecated, warned once) and then feeds the service too, so both sides agree.
 */
export function moduleDeadLetterKey(options: RedisStreamsModuleOptions): DeadLetterKeySetting | undefined {
  const own = options.deadLetters?.deadLetterKey;
  const recovery = options.server?.recovery;
  const fromServer = recovery !== null && typeof recovery === 'object' ? recovery.deadLetterKey : undefined;
  if (fromServer === undefined) return own;
  warnDeprecatedOnce(
    'RedisStreamsModule',
    'the module option server.recovery.deadLetterKey',
    'set deadLetters.deadLetterKey, which the servers, DeadLetterService and (as a "%s" template) the CLI all read',
  );
  if (own !== undefined && own !== fromServer) {
    throw new RedisStreamsOptionError(
      'server.recovery.deadLetterKey',
      'differs from deadLetters.deadLetterKey: set the dead-letter key once, as deadLetters.deadLetterKey',
    );
  }
  return fromServer;
}

/**
 * A factory-built server's `recovery` option with the module's dead-letter key. A server override
 * naming another key is refused: `DeadLetterService` and `dlq` would look at the wrong stream.
 */
export function recoveryWithDeadLetterKey(
  recovery: RecoveryOptions | false | undefined,
  key: DeadLetterKeySetting | undefined,
): RecoveryOptions | false | undefined {
  if (key === undefined) return recovery;
  if (recovery === undefined) return { deadLetterKey: key };
  if (recovery === false) return { enabled: false, deadLetterKey: key };
  if (recovery === null || typeof recovery !== 'object') return recovery; // the server names the bad option
  if (recovery.deadLetterKey === undefined) return { ...recovery, deadLetterKey: key };
  if (recovery.deadLetterKey !== key) {
    throw new RedisStreamsOptionError(
      'recovery.deadLetterKey',
      "differs from the module's deadLetters.deadLetterKey (DeadLetterService and the CLI would look at another stream): set the key once, in the module",
    );
  }
  return recovery;
}
