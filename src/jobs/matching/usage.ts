/**
 * Fair-share usage (CONTRACT STUB; docs/matching.md): every match charges the processors it gives to its
 * job's group and user; charges fade with half-life jobs.fairShare.halfLifeMs.
 */
import type { Db } from '../../kernel/db/database.ts';

/** A group's (user '') or a user's usage, decayed to now. */
export interface Usage {
  group: string;
  user: string;
  usage: number;
}

/** Every group's and user's usage as of `now`. */
export async function readUsage(_db: Db, _halfLifeMs: number, _now = Date.now()): Promise<Usage[]> {
  return [];
}

/** Adds `processors` to the usage of `group` and of `user` in it, decaying what was there to now. */
export async function chargeUsage(_db: Db, _group: string, _user: string, _processors: number, _halfLifeMs: number): Promise<void> {}
