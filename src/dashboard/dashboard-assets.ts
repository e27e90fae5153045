import { Inject, Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/** The files the page is made of, shipped next to this file (scripts/copy-assets.mjs copies them into dist). */
const ASSETS = new URL('./assets/', import.meta.url);

/** The page, its script and its style, read once when the dashboard module is created. */
@Injectable()
export class DashboardAssets {
  readonly script: string;
  readonly style: string;
  private readonly page: string;
  /** The mount path's last segment: links relative to `/admin/streams` stay right behind any prefix. */
  private readonly lastSegment: string;

  constructor(@Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) options: ResolvedDashboardOptions) {
    this.page = readFileSync(new URL('index.html', ASSETS), 'utf8');
    this.script = readFileSync(new URL('dashboard.js', ASSETS), 'utf8');
    this.style = readFileSync(new URL('dashboard.css', ASSETS), 'utf8');
    this.lastSegment = options.path.slice(options.path.lastIndexOf('/') + 1);
  }

  /**
   * The page for a request to `url`: its links to the assets are relative, so they resolve
   * under the mount path whether it was asked with a trailing slash or not. The page carries
   * no data: the script fetches everything from the JSON API.
   */
  html(url: string): string {
    const path = url.split('?')[0] ?? '';
    const base = path.endsWith('/') || this.lastSegment === '' ? 'assets/' : `${this.lastSegment}/assets/`;
    // The segment is plain URL characters (the path option allows no others); escaped all the same.
    return this.page.replaceAll('{{assets}}', escapeAttribute(base));
  }
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
