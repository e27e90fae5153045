import { Logger } from '@nestjs/common';
import type { Redactor } from './redaction.js';

/** A Nest `Logger` whose every line (message and extra parameters) goes through a `Redactor` first. */
export class RedactingLogger extends Logger {
  constructor(
    context: string,
    private readonly redactor: Redactor,
  ) {
    super(context);
  }

  override log(message: unknown, ...rest: unknown[]): void {
    super.log(this.redactor.value(message), ...rest.map(this.redactor.value));
  }

  override error(message: unknown, ...rest: unknown[]): void {
    super.error(this.redactor.value(message), ...rest.map(this.redactor.value));
  }

  override warn(message: unknown, ...rest: unknown[]): void {
    super.warn(this.redactor.value(message), ...rest.map(this.redactor.value));
  }

  override debug(message: unknown, ...rest: unknown[]): void {
    super.debug(this.redactor.value(message), ...rest.map(this.redactor.value));
  }

  override verbose(message: unknown, ...rest: unknown[]): void {
    super.verbose(this.redactor.value(message), ...rest.map(this.redactor.value));
  }

  override fatal(message: unknown, ...rest: unknown[]): void {
    super.fatal(this.redactor.value(message), ...rest.map(this.redactor.value));
  }
}
