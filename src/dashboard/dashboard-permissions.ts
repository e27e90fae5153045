import { SetMetadata } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/**
 * The kinds of action the dashboard's mutations are (one kind covers a route's single and bulk
 * forms): what the `actions` option allows, the mutation guard enforces and the page offers.
 * A new mutation route adds its kind here and declares it with `@DashboardAction(kind)`.
 */
export const ACTION_KINDS = ['redrive', 'purge', 'ack', 'claim', 'promote', 'remove', 'pause', 'delete-consumer', 'cancel'] as const;

/** One kind of dashboard action (`pause` covers pause and resume of a group). */
export type DashboardActionKind = (typeof ACTION_KINDS)[number];

/** Metadata key of a mutation route's kind, read by the mutation guard. */
export const ACTION_KIND_METADATA = 'nestjs-redis-streams:dashboard-action-kind';

/** Declares the kind of a mutation route: the mutation guard refuses it unless the `actions` option allows that kind. */
export const DashboardAction = (kind: DashboardActionKind): MethodDecorator => SetMetadata(ACTION_KIND_METADATA, kind);

/**
 * The `actions` option: the kinds allowed, every kind when not given; none while `readOnly`
 * (read-only refuses every mutation whatever the list says).
 */
export function actionsOption(value: unknown, readOnly: boolean): ReadonlySet<DashboardActionKind> {
  if (value !== undefined && !Array.isArray(value)) {
    throw new RedisStreamsOptionError('actions', `must be a list of action kinds (${ACTION_KINDS.join(', ')}), got ${describe(value)}`);
  }
  const kinds = (value ?? ACTION_KINDS).map((kind: unknown, index: number) => {
    if (!isActionKind(kind)) throw new RedisStreamsOptionError(`actions[${index}]`, `unknown action kind ${describe(kind)}: one of ${ACTION_KINDS.join(', ')}`);
    return kind;
  });
  return new Set(readOnly ? [] : kinds);
}

function isActionKind(kind: unknown): kind is DashboardActionKind {
  return (ACTION_KINDS as readonly unknown[]).includes(kind);
}

/**
 * Why the mutation guard refuses a route of kind `kind` (its `@DashboardAction`), or undefined
 * when `allowed` has it. A mutation route that declares no kind is refused: nothing slips through
 * unlisted.
 */
export function actionRefusal(kind: unknown, allowed: ReadonlySet<DashboardActionKind>): string | undefined {
  if (!isActionKind(kind)) return 'this mutation declares no action kind (dashboard-permissions.ts): refused';
  if (allowed.has(kind)) return undefined;
  const list = allowed.size === 0 ? 'none' : [...allowed].join(', ');
  return `action "${kind}" is not allowed (RedisStreamsDashboardModule actions: ${list})`;
}
