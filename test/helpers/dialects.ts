/**
 * Every suite runs on every dialect (Kysely's rule): SQLite always, PostgreSQL when reachable. Under
 * CI=true PostgreSQL is required; elsewhere its absence is reported once, visibly, and those runs skip.
 */
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

export type TestDialect = Dialect;

export const POSTGRES_URL = process.env.DIRIGO_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let probe: Promise<string | undefined> | undefined;

/** undefined when PostgreSQL answers, else why not. */
export function postgresUnavailable(): Promise<string | undefined> {
  probe ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return undefined;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return probe;
}

/** The dialects to run, and the reason PostgreSQL is skipped (printed by the caller's test as a skip). */
export async function dialects(): Promise<{ dialect: TestDialect; skip: string | false }[]> {
  const reason = await postgresUnavailable();
  if (reason && process.env.CI === 'true') {
    throw new Error(`PostgreSQL is required under CI=true but ${POSTGRES_URL} is unavailable: ${reason}`);
  }
  if (reason) process.stderr.write(`\n*** PostgreSQL suite SKIPPED: ${POSTGRES_URL} unavailable (${reason}) ***\n\n`);
  // DIRIGO_TEST_DIALECTS=postgres runs one dialect only (npm run test:s3: the multi-instance setup).
  const only = process.env.DIRIGO_TEST_DIALECTS?.split(',');
  const left = (d: TestDialect) => (only && !only.includes(d) ? `DIRIGO_TEST_DIALECTS=${only.join(',')}` : false);
  return [
    { dialect: 'sqlite', skip: left('sqlite') },
    { dialect: 'postgres', skip: reason ? `PostgreSQL unavailable: ${reason}` : left('postgres') },
  ];
}

/** A fresh schema for one test service; dropped by the returned function. */
export async function createPostgresSchema(): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return {
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    },
  };
}
