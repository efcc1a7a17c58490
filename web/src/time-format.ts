/**
 * One way to show the service's timestamps on every page: `2026-11-26 12:43:51`, to the second, in UTC
 * as the service records them (ISO 8601 with `T` and `Z`, with or without milliseconds).
 */
export function formatTimestamp(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '');
}
