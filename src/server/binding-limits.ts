import type { GlobalPermits } from '../flow/global-permits.js';
import type { SharedRateLimit } from '../flow/shared-rate-limit.js';

/** A binding's shared limits (one object for every partition of a pattern in one group; server-flow.ts builds them). */
export interface BindingLimits {
  /** `extras.rateLimit` without a key: its reader takes tokens before it reads. */
  readonly rate: SharedRateLimit | undefined;
  /** `extras.rateLimit` with a key: each entry takes a token of its key's bucket before its handler runs. */
  readonly perKey: SharedRateLimit | undefined;
  readonly permits: GlobalPermits | undefined;
}
