import { Inject, Injectable } from '@nestjs/common';
import { readdirSync, readFileSync } from 'node:fs';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/** The files the page is made of, shipped next to this file (scripts/copy-assets.mjs copies them into dist). */
const ASSETS = new URL('./assets/', import.meta.url);

/** The types of the files the page loads (its ES modules and its style); other files are not served. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** One file the page loads. */
export interface DashboardAsset {
  readonly contentType: string;
  readonly body: string;
}

/** The page, its scripts and its style, read once when the dashboard module is created. */
@Injectable()
export class DashboardAssets {
  private readonly page: string;
  /** By file name: only the files in the folder, so no request names a path outside it. */
  private readonly files = new Map<string, DashboardAsset>();
  /** The mount path's last segment: links relative to `/admin/streams` stay right behind any prefix. */
  private readonly lastSegment: string;

  constructor(@Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) options: ResolvedDashboardOptions) {
    this.page = readFileSync(new URL('index.html', ASSETS), 'utf8');
    for (const name of readdirSync(ASSETS)) {
      const contentType = CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1)];
      if (contentType !== undefined) this.files.set(name, { contentType, body: readFileSync(new URL(name, ASSETS), 'utf8') });
    }
    this.lastSegment = options.path.slice(options.path.lastIndexOf('/') + 1);
  }

  /** The script or style named `name` (a file name, no folder), or undefined when there is none. */
  file(name: string): DashboardAsset | undefined {
    return this.files.get(name);
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
