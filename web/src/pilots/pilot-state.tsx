/** A pilot's states as the Pilots page shows them (docs/pilots.md, States). */
import { Badge } from '@mantine/core';

export const STATES = ['Submitted', 'Waiting', 'Running', 'Done', 'Failed', 'Aborted', 'Lost'] as const;
const FINAL: readonly string[] = ['Done', 'Failed', 'Aborted', 'Lost'];
export const isEnded = (state: string) => FINAL.includes(state);

const STATE_COLOURS: Record<string, string> = { Submitted: 'gray', Waiting: 'yellow', Running: 'blue', Done: 'green', Failed: 'red', Aborted: 'orange', Lost: 'grape' };

export function StateBadge({ state }: { state: string }) {
  return (
    <Badge color={STATE_COLOURS[state] ?? 'gray'} variant="dot" styles={{ root: { minWidth: 'max-content' } }}>
      {state}
    </Badge>
  );
}
