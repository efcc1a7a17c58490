/** A pilot's states (DIRAC's pilot statuses, with Lost for a batch job that ended without a final report). */
export const PilotState = {
  /** A factory wrote its row and handed it to the batch system. */
  Submitted: 'Submitted',
  /** Queued in the batch system. */
  Waiting: 'Waiting',
  /** Its agent runs (its batch job runs, or it exchanged its secret for a token). */
  Running: 'Running',
  /** Its agent ended normally: no work left, its time spent, drained or stopped. */
  Done: 'Done',
  /** It could not be submitted, or its agent ended in error. */
  Failed: 'Failed',
  /** Revoked by an operator, or cancelled by the factory. */
  Aborted: 'Aborted',
  /** Its batch job ended without its agent's final report (scancel, a node crash, a time limit). */
  Lost: 'Lost',
} as const;
export type PilotState = (typeof PilotState)[keyof typeof PilotState];

export const PILOT_STATES: readonly PilotState[] = Object.values(PilotState);
export const FINAL_PILOT_STATES: readonly PilotState[] = [PilotState.Done, PilotState.Failed, PilotState.Aborted, PilotState.Lost];
/** A pilot the factory counts as not yet running (against `maxWaiting`). */
export const QUEUED_PILOT_STATES: readonly PilotState[] = [PilotState.Submitted, PilotState.Waiting];

export function isFinalPilotState(state: string): boolean {
  return (FINAL_PILOT_STATES as readonly string[]).includes(state);
}

/** Commands a pilot receives in its heartbeat reply. */
export type PilotCommand = 'drain' | 'stop';
