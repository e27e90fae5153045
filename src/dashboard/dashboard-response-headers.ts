import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { SECURITY_HEADERS } from './dashboard-security.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

interface RequestEmitter {
  prependListener(event: 'request', listener: (request: IncomingMessage, response: ServerResponse) => void): unknown;
}

/**
 * The security headers on every response under the mount, also those no dashboard route
 * answers: a 404 of an unknown path, a 400 of a body the app's parser refused (Express and
 * Fastify parse before any guard runs). Set on the Node response as the request arrives, before
 * Express or Fastify see it; both keep headers set there. (SecurityHeadersGuard sets them on
 * routed requests where the app has no Node server of its own, such as a serverless handler.)
 */
@Injectable()
export class DashboardResponseHeaders implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly config: ApplicationConfig,
    @Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
  ) {}

  onModuleInit(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as RequestEmitter | undefined;
    if (typeof server?.prependListener !== 'function') return;
    const mount = mountPath(this.config.getGlobalPrefix(), this.options.path);
    server.prependListener('request', (request, response) => {
      if (!isUnder(request.url ?? '', mount)) return;
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    });
  }
}

/** `/<prefix>/<path>` with one slash between the parts and none at the end (`/` alone for the root). */
function mountPath(prefix: string, path: string): string {
  const joined = `/${prefix}/${path}`.replace(/\/+/g, '/').replace(/\/$/, '');
  return joined === '' ? '/' : joined;
}

function isUnder(url: string, mount: string): boolean {
  const path = url.split('?')[0] ?? '';
  return mount === '/' || path === mount || path.startsWith(`${mount}/`);
}
