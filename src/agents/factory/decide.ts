/** How many pilots a partition gets this round (docs/pilots.md, "The factory", step 2). */

export interface PilotLimits {
  /** Most pilots queued (Submitted or Waiting) at once. */
  maxWaiting: number;
  /** Most pilots not ended at once. */
  maxPilots: number;
  /** Jobs one pilot runs at once. */
  slots: number;
}

/**
 * Pilots to submit now: while fewer than `maxWaiting` are queued, fewer than `maxPilots` live, and the
 * queued pilots' slots are fewer than the Waiting jobs they could run (`demand`).
 */
export function pilotsToSubmit(counts: { queued: number; total: number }, demand: number, limits: PilotLimits): number {
  const byWaiting = limits.maxWaiting - counts.queued;
  const byTotal = limits.maxPilots - counts.total;
  const byDemand = Math.ceil((demand - counts.queued * limits.slots) / limits.slots);
  return Math.max(0, Math.min(byWaiting, byTotal, byDemand));
}
