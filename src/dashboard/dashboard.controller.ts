import { Body, Controller, Get, Header, HttpCode, NotFoundException, Param, Post, Query, Req, Res, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Redactor } from '../redaction.js';
import { DashboardActions } from './dashboard-actions.js';
import { DashboardAssets } from './dashboard-assets.js';
import { DashboardContext } from './dashboard-context.js';
import { DashboardFind } from './dashboard-find.js';
import { DashboardBulk } from './dashboard-bulk.js';
import { DashboardReads, nameParameter } from './dashboard-reads.js';
import { EntryReads } from './entry-reads.js';
import { CSRF_HEADER, CsrfTokens } from './dashboard-csrf.js';
import { MutationGuard, SecurityHeadersGuard, TrustedRequestGuard } from './dashboard-security.js';
import { ACTION_KINDS, DashboardAction, type DashboardActionKind } from './dashboard-permissions.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { answer } from './http-errors.js';
import { StreamHistory } from './stream-history.js';

/** What the page learns before its first refresh. */
export interface DashboardSession {
  readOnly: boolean;
  /** The action kinds the server takes (the `actions` option); empty when read-only. */
  actions: DashboardActionKind[];
  /** The action kinds it refuses (all of them when read-only). */
  refusedActions: DashboardActionKind[];
  /** Sent back in the `X-CSRF-Token` header of every mutation (any replica takes it, for a day); null when read-only. */
  csrfToken: string | null;
  csrfHeader: string;
  refreshInterval: number;
  /** Streams an overview page holds at most. */
  maxStreams: number;
  /** ms between two samples of the charts; 0: no charts. */
  sampleInterval: number;
}

/**
 * The dashboard's routes under `options.path`, as a Nest controller so that the app's own HTTP
 * adapter (Express or Fastify) serves them. Built per `forRoot` call: the path and the app's
 * guard are class decorators. Guards run in order: security headers, the host and same-origin
 * checks, the app's guard, and on mutations the read-only / CSRF guard.
 */
export function dashboardController(options: ResolvedDashboardOptions): Type<unknown> {
  const guards: (Type<CanActivate> | CanActivate)[] = [SecurityHeadersGuard, TrustedRequestGuard];
  if (options.guard !== undefined) guards.push(options.guard);

  @Controller(options.path)
  @UseGuards(...guards)
  class RedisStreamsDashboardController {
    private readonly redactor: Redactor;

    constructor(
      private readonly assets: DashboardAssets,
      private readonly reads: DashboardReads,
      private readonly actions: DashboardActions,
      private readonly entryReads: EntryReads,
      private readonly tokens: CsrfTokens,
      private readonly adapterHost: HttpAdapterHost,
      context: DashboardContext,
      private readonly finder: DashboardFind,
      private readonly bulk: DashboardBulk,
      private readonly history: StreamHistory,
    ) {
      this.redactor = context.answerRedactor;
    }

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    page(@Req() request: { url: string }): string {
      return this.assets.html(request.url);
    }

    /** The page's ES modules and style (dashboard.js imports the others). */
    @Get('assets/:file')
    asset(@Param('file') file: string, @Res({ passthrough: true }) response: unknown): string {
      const asset = this.assets.file(file);
      if (asset === undefined) throw new NotFoundException('no such file');
      this.adapterHost.httpAdapter.setHeader(response, 'Content-Type', asset.contentType);
      return asset.body;
    }

    @Get('api/session')
    async session(): Promise<DashboardSession> {
      return { readOnly: options.readOnly, actions: [...options.actions], refusedActions: ACTION_KINDS.filter((kind) => !options.actions.has(kind)), csrfToken: options.readOnly ? null : await this.tokens.issue(), csrfHeader: CSRF_HEADER, refreshInterval: options.refreshInterval, maxStreams: options.maxStreams, sampleInterval: options.sampleInterval };
    }

    @Get('api/overview')
    overview(@Query('stream') stream: unknown, @Query('offset') offset: unknown, @Query('match') match: unknown) {
      const named = stream === undefined ? [] : Array.isArray(stream) ? stream : [stream];
      return answer(this.redactor, () => this.reads.overview(named as unknown[] as string[], offset, match));
    }

    @Get('api/dead-letters')
    deadLetters(@Query('stream') stream: unknown, @Query('cursor') cursor: unknown) {
      return answer(this.redactor, () => this.reads.deadLetterList(stream, cursor));
    }

    @Get('api/dead-letter')
    deadLetter(@Query('stream') stream: unknown, @Query('id') id: unknown) {
      return answer(this.redactor, async () => {
        const letter = await this.reads.deadLetter(stream, id);
        if (letter === null) throw new NotFoundException('no such dead letter (redriven or purged)');
        return letter;
      });
    }

    @Get('api/pending')
    pending(@Query('stream') stream: unknown, @Query('group') group: unknown, @Query('cursor') cursor: unknown) {
      return answer(this.redactor, () => this.reads.pending(stream, group, cursor));
    }

    @Get('api/delayed')
    delayed(@Query('stream') stream: unknown, @Query('cursor') cursor: unknown) {
      return answer(this.redactor, () => this.reads.delayed(stream, cursor));
    }

    @Get('api/schedules')
    schedules(@Query('stream') stream: unknown, @Query('cursor') cursor: unknown) {
      return answer(this.redactor, () => this.reads.schedules(stream, cursor));
    }

    @Get('api/entry')
    entry(@Query('stream') stream: unknown, @Query('id') id: unknown) {
      return answer(this.redactor, async () => {
        const entry = await this.reads.entry(stream, id);
        if (entry === null) throw new NotFoundException('no such entry (acknowledged and deleted, or trimmed)');
        return entry;
      });
    }

    /** Entries (or dead letters) whose field equals a value, or whose values contain a substring: one bounded page of the scan. */
    @Get('api/find')
    find(@Query() query: Record<string, unknown>) {
      return answer(this.redactor, () => this.finder.find(query));
    }

    /** The kept samples of a stream (memory only: no Redis command), for its charts. */
    @Get('api/series')
    series(@Query('stream') stream: unknown) {
      return answer(this.redactor, async () => {
        const series = this.history.seriesOf(nameParameter('stream', stream));
        if (series === null) throw new NotFoundException(options.sampleInterval === 0 ? 'no samples: sampleInterval is 0' : 'no samples of this stream (yet): the module samples the streams the overview lists, every sampleInterval');
        return series;
      });
    }

    @Post('api/dead-letters/redrive')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('redrive')
    redrive(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.redrive(body));
    }

    @Post('api/dead-letters/purge')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('purge')
    purge(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.purge(body));
    }

    @Post('api/pending/ack')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('ack')
    ack(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.ack(body));
    }

    @Post('api/pending/claim')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('claim')
    claim(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.claim(body));
    }

    @Post('api/delayed/promote')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('promote')
    promoteDelayed(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.promoteDelayed(body));
    }

    @Post('api/delayed/remove')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('remove')
    removeDelayed(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.removeDelayed(body));
    }

    @Post('api/groups/pause')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('pause')
    pauseGroup(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.setPaused(body, true));
    }

    @Post('api/groups/resume')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('pause')
    resumeGroup(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.setPaused(body, false));
    }

    @Post('api/consumers/delete')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('delete-consumer')
    deleteConsumer(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.deleteConsumer(body));
    }

    @Get('api/entries')
    entries(@Query('stream') stream: unknown, @Query('order') order: unknown, @Query('from') from: unknown, @Query('to') to: unknown, @Query('cursor') cursor: unknown) {
      return answer(this.redactor, () => this.entryReads.entries({ stream, order, from, to, cursor }));
    }

    @Get('api/entry-view')
    entryView(@Query('stream') stream: unknown, @Query('id') id: unknown) {
      return answer(this.redactor, async () => {
        const entry = await this.entryReads.entry(stream, id);
        if (entry === null) throw new NotFoundException('no such entry (acknowledged and deleted, trimmed, or its dead letter redriven or purged)');
        return entry;
      });
    }

    @Post('api/entries/cancel')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('cancel')
    cancelEntry(@Body() body: unknown) {
      return answer(this.redactor, () => this.actions.cancel(body));
    }

    /** Bulk actions on everything of a list matching a filter (or all of it), one bounded step a request: see dashboard-bulk.ts. */
    @Post('api/bulk/redrive')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('redrive')
    bulkRedrive(@Body() body: unknown) {
      return answer(this.redactor, () => this.bulk.redrive(body));
    }

    @Post('api/bulk/purge')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('purge')
    bulkPurge(@Body() body: unknown) {
      return answer(this.redactor, () => this.bulk.purge(body));
    }

    @Post('api/bulk/ack')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('ack')
    bulkAck(@Body() body: unknown) {
      return answer(this.redactor, () => this.bulk.ack(body));
    }

    @Post('api/bulk/promote')
    @HttpCode(200)
    @UseGuards(MutationGuard)
    @DashboardAction('promote')
    bulkPromote(@Body() body: unknown) {
      return answer(this.redactor, () => this.bulk.promote(body));
    }
  }
  return RedisStreamsDashboardController;
}
