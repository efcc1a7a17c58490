/**
 * The whole configuration, assembled from the sections each domain exports: read once at start-up from
 * YAML, validated against one TypeBox schema with messages that name the offending key, relative paths
 * resolved against the config file's folder, then deep-frozen.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import { parseDocument } from 'yaml';
import { ConfigError, CoreConfigSections, deepFreeze, environment, LOG_LEVELS, validateConfig, type AppConfig, type LogLevel } from '../kernel/config.ts';
import { AccountingConfigSchema } from '../accounting/index.ts';
import { CatalogueConfigSchema } from '../catalogue/index.ts';
import { checkSandboxStore, JobsConfigSchema } from '../jobs/index.ts';
import { OAuthConfigSchema, TokensConfigSchema } from '../auth/index.ts';
import { IdentityProvidersConfigSchema, checkIdentityProviders } from '../federation/index.ts';
import { WebAppConfigSchema } from '../webapp/index.ts';
import { DownloadsConfigSchema } from '../downloads/index.ts';
import { checkClients, checkJoiningConfig, checkRegistry, ClientsConfigSchema, RegistryConfigSchema } from '../registry/index.ts';

const ConfigSchema = Type.Object(
  {
    ...CoreConfigSections,
    tokens: TokensConfigSchema,
    registry: RegistryConfigSchema,
    clients: ClientsConfigSchema,
    jobs: JobsConfigSchema,
    accounting: AccountingConfigSchema,
    oauth: OAuthConfigSchema,
    identityProviders: IdentityProvidersConfigSchema,
    catalogue: CatalogueConfigSchema,
    webapp: WebAppConfigSchema,
    downloads: DownloadsConfigSchema,
  },
  { additionalProperties: false },
);

export type ConfigFile = Static<typeof ConfigSchema>;

/** What every domain sees as AppConfig is exactly what this schema validates. */
export type Config = AppConfig;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<Omit<Config, 'dataDir' | 'source'>, ConfigFile> = true;
void sameShape;

export { ConfigError };

/** Fields a caller (CLI flags, tests) may force after the file is read. */
export interface ConfigOverrides {
  host?: string;
  port?: number;
  databaseUrl?: string;
  logLevel?: string;
}

export interface LoadConfigOptions {
  dataDir: string;
  /** YAML text or a parsed object; when a path is given instead, it is read. */
  file?: string;
  object?: unknown;
  overrides?: ConfigOverrides;
  /** Environment to honour; defaults to process.env. Only DIRIGO_DATABASE_URL is read. */
  env?: Record<string, string | undefined>;
}

/**
 * Reads, validates, resolves and freezes the configuration.
 * @throws ConfigError naming the first bad key.
 */
export function loadConfig(options: LoadConfigOptions): Config {
  const source = options.file ?? '<inline config>';
  let raw: unknown = options.object ?? {};
  if (options.file !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.file, 'utf8');
    } catch (err) {
      throw new ConfigError(`${source}: cannot read: ${(err as Error).message}`);
    }
    const doc = parseDocument(text);
    if (doc.errors.length > 0) throw new ConfigError(`${source}: not valid YAML: ${doc.errors[0]!.message}`);
    raw = doc.toJS() ?? {};
  }
  const parsed = validateConfig(ConfigSchema, raw, source);
  const env = options.env ?? environment.all();
  const overrides = options.overrides ?? {};
  if (overrides.host !== undefined) parsed.server.host = overrides.host;
  if (overrides.port !== undefined) parsed.server.port = overrides.port;
  const databaseUrl = overrides.databaseUrl ?? env.DIRIGO_DATABASE_URL;
  if (databaseUrl) parsed.database.url = databaseUrl;
  if (overrides.logLevel !== undefined) {
    if (!(LOG_LEVELS as readonly string[]).includes(overrides.logLevel)) throw new ConfigError(`log level: '${overrides.logLevel}' is not one of ${LOG_LEVELS.join(', ')}`);
    parsed.logging.level = overrides.logLevel as LogLevel;
  }

  const dataDir = resolve(options.dataDir);
  const base = options.file !== undefined ? dirname(resolve(options.file)) : dataDir;
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  parsed.tls.cert = abs(parsed.tls.cert);
  parsed.tls.key = abs(parsed.tls.key);
  parsed.tls.caDir = abs(parsed.tls.caDir);
  if (parsed.database.url.startsWith('sqlite:')) {
    const file = parsed.database.url.slice('sqlite:'.length);
    parsed.database.url = file === ':memory:' ? parsed.database.url : `sqlite:${abs(file)}`;
  } else if (!/^postgres(ql)?:\/\//.test(parsed.database.url)) {
    throw new ConfigError(`${source}: database.url: must start with sqlite: or postgres://`);
  }
  checkRegistry(parsed.registry, source);
  checkJoiningConfig(parsed.registry, source, abs);
  checkClients(parsed.clients, source);
  checkSandboxStore(parsed.jobs.sandbox, source);
  const idpProblem = checkIdentityProviders(parsed, abs);
  if (idpProblem) throw new ConfigError(`${source}: ${idpProblem}`);
  return deepFreeze({ ...parsed, dataDir, source });
}
