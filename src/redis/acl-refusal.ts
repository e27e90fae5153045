/**
 * Redis refuses a command the ACL user may not run with NOPERM. Redis 7+ names the command or
 * subcommand ("NOPERM User x has no permissions to run the 'cluster|slots' command"); 6.2 names
 * the command only ("... to run the 'cluster' command or its subcommand").
 */
const NOPERM = /^NOPERM\b.*?'([^']+)' command/;

/**
 * Whether `error` is the ACL refusing a command or a key (NOPERM), also when a wrapper put its own
 * prefix before it ("…: NOPERM …", as the delayed promoter's check allowed for). A refusal inside a
 * script says no NOPERM at all (ERR "The user executing the script can't …"): that is no match.
 */
export function isNoPermission(error: unknown): boolean {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' && /(^|: )NOPERM\b/.test(message);
}

/**
 * When `error` is an ACL refusal of `command` (what was sent, as `['cluster', 'slots']`), the
 * sentence that says so and names the rule to add; `undefined` for any other error. `user` is the
 * ACL user of the connection (`default` without one).
 */
export function aclRefusal(error: unknown, command: readonly string[], user: string | undefined): string | undefined {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  if (typeof message !== 'string') return undefined;
  const refused = NOPERM.exec(message);
  if (refused === null) return undefined;
  // The reply's own name when it is exact (7+: a subcommand's full name), else what was sent.
  const rule = refused[1]!.includes('|') ? refused[1]! : command.map((part) => part.toLowerCase()).join('|');
  const name = rule.split('|').join(' ').toUpperCase();
  return `the ACL user "${user ?? 'default'}" may not run ${name}: add +${rule} (docs/security.md)`;
}
