/** CSV answers (RFC 4180): a header line, then one line per row, CRLF line ends, fields quoted when they must be. */
import type { FastifyReply } from 'fastify';

export const CSV_MEDIA_TYPE = 'text/csv';

function field(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The table as CSV text: `columns` name the header and the rows' keys, in order. */
export function toCsv<K extends string>(columns: readonly K[], rows: readonly Record<K, string | number | null>[]): string {
  const lines = [columns.map(field).join(','), ...rows.map((r) => columns.map((c) => field(r[c])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

/** RFC 9110 §12.5.1: CSV when `format` says so, or without it when the client names text/csv with a weight at least that of JSON. */
export function wantsCsv(format: 'json' | 'csv' | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  if (!accept) return false;
  const weights = new Map<string, number>();
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    weights.set(type!, q ? Number(q.slice(2)) : 1);
  }
  const csv = weights.get(CSV_MEDIA_TYPE) ?? 0;
  const json = weights.get('application/json') ?? weights.get('application/*') ?? weights.get('*/*') ?? 0;
  return csv > 0 && csv >= json;
}

/** Sends `text` as a CSV download named `filename`. */
export function sendCsv(reply: FastifyReply, filename: string, text: string): FastifyReply {
  return reply.type(`${CSV_MEDIA_TYPE}; charset=utf-8`).header('content-disposition', `attachment; filename="${filename}"`).send(text);
}
