import { Controller, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext } from '../src/index.js';
import { REPORTS, type ReportDone, type ReportProgress, type ReportRequest } from './contracts.js';

/** How long one page takes to render: long enough that the orders side sees the job running. */
export const PAGE_MS = 250;

/**
 * The billing side's long job: renders a report page by page, reporting `{ page, of }` after each
 * (ctx.progress), and returns where the file is; its result is kept for ten minutes
 * (keepResults), so the orders side can fetch it after the fact.
 */
@Controller()
export class ReportsController {
  @EventPattern<string>(REPORTS, { keepResults: { ttl: 'PT10M' }, timeout: 'PT1M' })
  async render(@Payload() request: ReportRequest, @Ctx() ctx: RedisStreamsContext): Promise<ReportDone> {
    for (let page = 1; page <= request.pages; page++) {
      ctx.signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, PAGE_MS)); // the "rendering"
      const progress: ReportProgress = { page, of: request.pages };
      await ctx.progress(progress);
    }
    return { file: `reports/${request.month}.pdf`, pages: request.pages };
  }
}

@Module({ controllers: [ReportsController] })
export class ReportsModule {}
