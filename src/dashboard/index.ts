// `nestjs-redis-streams/dashboard`: the operator dashboard. Only this entry point loads it.
export { RedisStreamsDashboardModule } from './redis-streams-dashboard.module.js';
export type { RedisStreamsDashboardOptions } from './dashboard.options.js';
export { ACTION_KINDS, type DashboardActionKind } from './dashboard-permissions.js';
export type { DashboardSession } from './dashboard.controller.js';
export type { ConsumerView, GroupView, OverviewView, StreamView } from './dashboard-views.js';
export type { DeadLettersView, DeadLetterView, DelayedEntryView, DelayedListView, PendingView } from './dashboard-reads.js';
export type { FieldText, FieldView } from './field-views.js';
export type { FindView, FindTarget } from './dashboard-find.js';
export type { BulkView } from './dashboard-bulk.js';
