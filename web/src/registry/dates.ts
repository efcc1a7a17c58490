/** Registry end dates are whole days in UTC: a date input's `YYYY-MM-DD` and the API's ISO instants. */

/** The last second of `day` (YYYY-MM-DD) in UTC: a membership or account that ends on a day lasts through it. */
export function endOfDay(day: string): string {
  return `${day}T23:59:59.000Z`;
}

/** The `YYYY-MM-DD` of an ISO instant, for a date input; '' for none. */
export function dateInput(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 10) : '';
}

/** A day for a table: `2026-12-31`, or `—`. */
export function day(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 10) : '—';
}
