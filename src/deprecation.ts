import { Logger } from '@nestjs/common';

const warned = new Set<string>();

/** Logs a deprecation once per process (per `what`), as a Nest Logger warning under `context`. */
export function warnDeprecatedOnce(context: string, what: string, advice: string): void {
  if (warned.has(what)) return;
  warned.add(what);
  new Logger(context).warn(`${what} is deprecated: ${advice}`);
}
