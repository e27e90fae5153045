/**
 * Cron rules whose next occurrence is hours or days away, whatever the moment a spec runs at. A
 * spec that compares a schedule's next run with one it computes from its own clock read, or sorts
 * it among entries due minutes from now, fails when an occurrence falls between its reads or among
 * those entries: a fixed '0 2 * * *' Europe/Berlin does when the run crosses 01:00 UTC in winter.
 */

/** The hour (0-23) and weekday (0 = Sunday) of Unix time `ms` in the IANA zone `timezone`. */
export function wallClockIn(ms: number, timezone: string): { hour: number; weekday: number } {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hour: 'numeric', hourCycle: 'h23', weekday: 'short' }).formatToParts(new Date(ms));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return { hour: Number(part('hour')), weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(part('weekday')) };
}

/**
 * An hour of the day in `timezone` about half a day after `nowMs`: `0 <hour> * * *` next runs 11 to
 * 23 hours after it. Hours 2 and 3, which daylight saving skips or repeats in Europe (croner runs a
 * skipped 02:00 at 03:00), are moved ten hours on.
 */
export function hourHalfADayAfter(nowMs: number, timezone: string): number {
  const { hour } = wallClockIn(nowMs + 12 * 3_600_000, timezone);
  return hour === 2 || hour === 3 ? hour + 10 : hour;
}

/** The weekday (0 = Sunday) in `timezone` three days after `nowMs`: a weekly rule on that day next runs 2 to 4 days after it. */
export function weekdayThreeDaysAfter(nowMs: number, timezone: string): number {
  return wallClockIn(nowMs + 3 * 86_400_000, timezone).weekday;
}
