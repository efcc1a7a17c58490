/**
 * Output that suits where it goes. On a terminal: tables fit its width and statuses are coloured; in a
 * pipe or a file: full cells and no escape codes. Colours are never used with NO_COLOR set to anything
 * but the empty string (https://no-color.org) or with TERM=dumb.
 */
import { environment } from '../kernel/config.ts';

type Stream = Pick<NodeJS.WriteStream, 'isTTY' | 'columns'>;

/** The terminal's width, or undefined when the output is not a terminal (nothing is cut then). */
export function terminalWidth(stream: Stream = process.stdout): number | undefined {
  return stream.isTTY && stream.columns > 0 ? stream.columns : undefined;
}

export function colourOn(stream: Stream = process.stdout): boolean {
  const noColour = environment.get('NO_COLOR');
  return Boolean(stream.isTTY) && (noColour === undefined || noColour === '') && environment.get('TERM') !== 'dumb';
}

const SGR = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, dim: 2 } as const;
export type Colour = keyof typeof SGR;

/** `text` in `colour` when the stream takes colours, otherwise `text` unchanged. */
export function paint(text: string, colour: Colour | undefined, stream: Stream = process.stdout): string {
  return colour && colourOn(stream) ? `\x1b[${SGR[colour]}m${text}\x1b[0m` : text;
}

const NARROWEST = 4;

/**
 * Rows under a header, columns two spaces apart. Given a width, the widest columns give way (their cells
 * end with …) until the table fits or every column is as narrow as it can be; the last column is never
 * padded. `colour` picks a colour for a cell after it is padded, so escape codes never count as width.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], options: { width?: number | undefined; colour?: (column: number, cell: string) => Colour | undefined } = {}): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  if (options.width !== undefined) {
    const total = () => widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
    while (total() > options.width) {
      const widest = widths.indexOf(Math.max(...widths));
      if (widths[widest]! <= NARROWEST) break;
      widths[widest]!--;
    }
  }
  const line = (cells: readonly string[], coloured: boolean) =>
    cells
      .map((cell, i) => {
        const w = widths[i]!;
        const fitted = cell.length > w ? `${cell.slice(0, w - 1)}…` : i === cells.length - 1 ? cell : cell.padEnd(w);
        return coloured ? paint(fitted, options.colour?.(i, cell)) : fitted;
      })
      .join('  ')
      .trimEnd();
  return [line(header, false), ...rows.map((r) => line(r, true))].join('\n') + '\n';
}
