import { Module, type DynamicModule } from '@nestjs/common';
import { DashboardActions } from './dashboard-actions.js';
import { DashboardAssets } from './dashboard-assets.js';
import { DashboardContext } from './dashboard-context.js';
import { DashboardFind } from './dashboard-find.js';
import { DashboardBulk } from './dashboard-bulk.js';
import { dashboardController } from './dashboard.controller.js';
import { resolveDashboardOptions, type RedisStreamsDashboardOptions } from './dashboard.options.js';
import { DashboardReads } from './dashboard-reads.js';
import { EntryReads } from './entry-reads.js';
import { CsrfTokens } from './dashboard-csrf.js';
import { DashboardResponseHeaders } from './dashboard-response-headers.js';
import { MutationGuard, SecurityHeadersGuard, TrustedRequestGuard } from './dashboard-security.js';
import { StreamHistory } from './stream-history.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/**
 * The operator dashboard: a page and its JSON API under `path`, served by the app's HTTP adapter.
 * Needs `RedisStreamsModule.forRoot` in the app (it reads through the module's connection).
 * Read-only unless `readOnly: false`, which needs the app's `guard`. See docs/dashboard.md.
 */
@Module({})
export class RedisStreamsDashboardModule {
  static forRoot(options: RedisStreamsDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RedisStreamsDashboardModule,
      imports: [...resolved.imports],
      controllers: [dashboardController(resolved)],
      providers: [
        { provide: REDIS_STREAMS_DASHBOARD_OPTIONS, useValue: resolved },
        DashboardContext,
        DashboardReads,
        DashboardFind,
        DashboardBulk,
        StreamHistory,
        DashboardActions,
        EntryReads,
        DashboardAssets,
        CsrfTokens,
        DashboardResponseHeaders,
        SecurityHeadersGuard,
        TrustedRequestGuard,
        MutationGuard,
      ],
    };
  }
}
