import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { DashboardApp } from './dashboard-app.js';

/** The app's guard of the tests: lets a request on when it carries `x-operator: yes`. */
@Injectable()
export class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

/** The operators' guard of the browser tests: lets everyone on (OperatorGuard is the one that refuses). */
@Injectable()
export class AllowOperators implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

export const OPERATOR = { 'x-operator': 'yes' };
export const ADAPTERS = ['express', 'fastify'] as const;

export async function getJson<T = Record<string, unknown>>(app: DashboardApp, path: string, params: Record<string, string | undefined> = {}): Promise<{ status: number; body: T; bytes: number }> {
  const url = new URL(`${app.page}/api/${path}`);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  const response = await fetch(url, { headers: OPERATOR, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as T, bytes: Buffer.byteLength(text) };
}

/** A mutation with the session's CSRF token (`csrf` from `csrfToken`). */
export async function postJson<T = Record<string, unknown>>(app: DashboardApp, path: string, body: unknown, csrf: string | null): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = { ...OPERATOR, 'content-type': 'application/json' };
  if (csrf !== null) headers['x-csrf-token'] = csrf;
  const response = await fetch(`${app.page}/api/${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: (await response.json()) as T };
}

export async function csrfToken(app: DashboardApp): Promise<string | null> {
  return (await getJson<{ csrfToken: string | null }>(app, 'session')).body.csrfToken;
}
