import { RedisStreamsOptionError } from '../errors.js';
import { defaultPriorityOf, priorityStreamKey } from '../priorities/priority-lanes.js';
import { describe } from '../validation.js';

/**
 * The lane stream of one emit or send on a pattern with priority lanes (client option
 * `priorities`): the record's `priority`, which must be one of the lanes, else the default lane
 * (the middle one). A `priority` on a pattern without lanes is an error: nobody would read the
 * stream it names.
 */
export function priorityLaneStream(pattern: string, stream: string, lanes: readonly string[] | undefined, priority: unknown): string | undefined {
  if (lanes === undefined) {
    if (priority === undefined) return undefined;
    throw new RedisStreamsOptionError(
      'priority',
      `pattern "${pattern}" has no priority lanes: list them in the client option priorities (as the handler's extras.priorities), or leave priority out`,
    );
  }
  if (priority === undefined) return priorityStreamKey(stream, defaultPriorityOf(lanes));
  if (typeof priority !== 'string' || !lanes.includes(priority)) {
    throw new RedisStreamsOptionError('priority', `must be one of the lanes of "${pattern}" (${lanes.join(', ')}), got ${describe(priority)}`);
  }
  return priorityStreamKey(stream, priority);
}
