/**
 * The month's APEL summary message (docs/accounting.md "Exports"): the `APEL-summary-job-message: v0.3`
 * format that APEL's loader and AUDITOR's APEL plugin send with ssmsend, one summary per site, VO group
 * and processors, from the usage records of the runs that ended in the month (UTC) and had started.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { AccountingConfig } from './config-schema.ts';

export interface ApelSummary {
  site: string;
  ownerGroup: string;
  processors: number;
  jobs: number;
  wallSeconds: number;
  cpuSeconds: number;
  /** Seconds since the epoch. */
  earliestEnd: number;
  latestEnd: number;
}

const HOUR_MS = 3600_000;

/** The month's sums per site, group and processors, in that order. */
export async function apelSummaries(db: Kysely<Database>, year: number, month: number): Promise<ApelSummary[]> {
  const fromHour = Date.UTC(year, month - 1, 1) / HOUR_MS;
  const toHour = Date.UTC(year, month, 1) / HOUR_MS;
  const rows = await db
    .selectFrom('usage_records')
    .select([
      'site',
      'owner_group',
      'processors',
      sql<number>`count(*)`.as('jobs'),
      sql<number>`sum(wall_seconds)`.as('wall'),
      sql<number>`sum(coalesce(cpu_user_seconds, 0) + coalesce(cpu_system_seconds, 0))`.as('cpu'),
      sql<string>`min(end_time)`.as('earliest'),
      sql<string>`max(end_time)`.as('latest'),
    ])
    .where('end_hour', '>=', fromHour)
    .where('end_hour', '<', toHour)
    // A run that never started (killed while Matched) used nothing a site accounts for.
    .where('start_time', 'is not', null)
    .groupBy(['site', 'owner_group', 'processors'])
    .orderBy('site')
    .orderBy('owner_group')
    .orderBy('processors')
    .execute();
  return rows.map((r) => ({
    site: r.site,
    ownerGroup: r.owner_group,
    processors: Number(r.processors),
    jobs: Number(r.jobs),
    wallSeconds: Number(r.wall),
    cpuSeconds: Number(r.cpu),
    earliestEnd: Math.floor(Date.parse(r.earliest) / 1000),
    latestEnd: Math.floor(Date.parse(r.latest) / 1000),
  }));
}

/**
 * The message: a header line, then per summary `Key: value` lines ending with `%%`. Durations are whole
 * seconds; Dirigo runs no benchmark, so the normalised durations equal the raw ones (factor 1).
 */
export function apelMessage(summaries: readonly ApelSummary[], year: number, month: number, apel: AccountingConfig['apel'], submitHost: string): string {
  const lines = ['APEL-summary-job-message: v0.3'];
  for (const s of summaries) {
    const wall = Math.round(s.wallSeconds);
    const cpu = Math.round(s.cpuSeconds);
    lines.push(
      `Site: ${apel.sites[s.site] ?? s.site}`,
      `Month: ${month}`,
      `Year: ${year}`,
      `VO: ${apel.vo}`,
      `VOGroup: /${apel.vo}/${s.ownerGroup}`,
      'VORole: Role=NULL',
      `SubmitHost: ${submitHost}`,
      `Infrastructure: ${apel.infrastructure}`,
      'NodeCount: 1',
      `Processors: ${s.processors}`,
      `EarliestEndTime: ${s.earliestEnd}`,
      `LatestEndTime: ${s.latestEnd}`,
      `WallDuration: ${wall}`,
      `CpuDuration: ${cpu}`,
      `NormalisedWallDuration: ${wall}`,
      `NormalisedCpuDuration: ${cpu}`,
      `NumberOfJobs: ${s.jobs}`,
      '%%',
    );
  }
  return `${lines.join('\n')}\n`;
}
