/**
 * A group's fair-share weight: its registry `share` (registry_groups.share) first, then
 * jobs.fairShare.shares, then 1. The matcher and GET /jobs/shares both ask this one function, so the
 * share the matcher acts on is the one the API reports.
 */
import type { AppContext } from '../../kernel/context.ts';
import type { JobsConfig } from '../config-schema.ts';

/** The registry's share of a group, when it sets one. */
export type RegistryShare = (group: string) => number | undefined;

/** The share of every group as the registry snapshot says now (it is read per call: an admin's PATCH counts at once). */
export const registryShareOf =
  (ctx: AppContext): RegistryShare =>
  (group) =>
    ctx.registry.group(group)?.share;

/** `group` → its share, by the order above. */
export function groupShares(config: JobsConfig, registryShare: RegistryShare = () => undefined): (group: string) => number {
  const configured = config.fairShare?.shares ?? {};
  return (group) => registryShare(group) ?? configured[group] ?? 1;
}
