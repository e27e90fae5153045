/**
 * A duration as the CLI shows it (formatDuration: `850ms`, `12.3s`, `4m05s`, `2h03m`, `3d04h`), as
 * RegExp source. An idle time or a pause measured while the spec runs may land in any unit on a
 * loaded machine: a spec matching `\d+ms` alone fails once a second passes.
 */
export const SHOWN_DURATION = String.raw`(?:\d+ms|\d+\.\ds|\d+m\d\ds|\d+h\d\dm|\d+d\d\dh)`;
