/** How the CLI colours a job status on a terminal. */
import type { Colour } from '../../terminal/terminal.ts';

/** Final statuses green or red, running ones blue, waiting ones yellow. */
export function statusColour(status: string): Colour | undefined {
  if (status === 'Done') return 'green';
  if (status === 'Failed' || status === 'Killed' || status === 'Stalled') return 'red';
  if (status === 'Running' || status === 'Completing') return 'blue';
  if (status === 'Deleted') return 'dim';
  return 'yellow';
}
