/**
 * Configuration: read once at start-up from YAML, validated against one TypeBox schema with messages that
 * name the offending key, relative paths resolved against the config file's folder, then deep-frozen.
 * This is the only module that reads process.env.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { parseDocument } from 'yaml';
import { CatalogueConfigSchema } from '../catalogue/config-schema.ts';
import { JobsConfigSchema } from '../jobs/config-schema.ts';
import { OAuthConfigSchema } from '../auth/config-schema.ts';
import { IdentityProvidersConfigSchema, checkIdentityProviders } from '../federation/config-schema.ts';

const UserSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    dns: Type.Array(Type.String({ minLength: 3 }), { default: [] }),
    email: Type.Optional(Type.String()),
    /** scrypt hash for local password login (embedded default only). */
    passwordHash: Type.Optional(Type.String()),
    /** Upstream accounts (OIDC issuer + subject) that sign in as this user (identityProviders, matchBy identity). */
    identities: Type.Optional(Type.Array(Type.Object({ issuer: Type.String({ minLength: 1 }), subject: Type.String({ minLength: 1 }) }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
);

const GroupSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    members: Type.Array(Type.String(), { default: [] }),
    properties: Type.Array(Type.String(), { default: [] }),
  },
  { additionalProperties: false },
);

const ClientSchema = Type.Object(
  {
    clientId: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' }),
    name: Type.String(),
    type: Type.Union([Type.Literal('public'), Type.Literal('confidential')]),
    secretHash: Type.Optional(Type.String()),
    redirectUris: Type.Array(Type.String(), { default: [] }),
    grants: Type.Array(Type.String(), { default: ['authorization_code', 'refresh_token'] }),
  },
  { additionalProperties: false },
);

const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: '127.0.0.1' }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 8443 }),
        /** External URL (issuer, links); derived from host and the bound port when absent. */
        publicUrl: Type.Optional(Type.String({ pattern: '^https://' })),
        bodyLimit: Type.Integer({ minimum: 1024, default: 1048576 }),
        maxHeaderSize: Type.Integer({ minimum: 1024, default: 16384 }),
      },
      { additionalProperties: false, default: {} },
    ),
    tls: Type.Object(
      {
        cert: Type.String({ default: 'pki/server.crt' }),
        key: Type.String({ default: 'pki/server.key' }),
        /** Folder of PEM files: the CAs trusted to issue user certificates. */
        caDir: Type.String({ default: 'pki/trusted' }),
      },
      { additionalProperties: false, default: {} },
    ),
    database: Type.Object(
      {
        /** `sqlite:<file>` (relative to the data dir) or `postgres://...`. */
        url: Type.String({ default: 'sqlite:dirigo.db' }),
      },
      { additionalProperties: false, default: {} },
    ),
    tokens: Type.Object(
      {
        issuer: Type.Optional(Type.String({ pattern: '^https://' })),
        audience: Type.Optional(Type.String()),
        algorithm: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256')], { default: 'EdDSA' }),
        accessTokenLifetime: Type.Integer({ minimum: 60, maximum: 86400, default: 3600 }),
      },
      { additionalProperties: false, default: {} },
    ),
    registry: Type.Object(
      {
        users: Type.Array(UserSchema, { default: [] }),
        groups: Type.Array(GroupSchema, { default: [] }),
        setups: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), { default: [] }),
      },
      { additionalProperties: false, default: {} },
    ),
    clients: Type.Array(ClientSchema, { default: [] }),
    jobs: JobsConfigSchema,
    oauth: OAuthConfigSchema,
    identityProviders: IdentityProvidersConfigSchema,
    catalogue: CatalogueConfigSchema,
    logging: Type.Object(
      {
        level: Type.Union(
          [
            Type.Literal('fatal'),
            Type.Literal('error'),
            Type.Literal('warn'),
            Type.Literal('info'),
            Type.Literal('debug'),
            Type.Literal('trace'),
            Type.Literal('silent'),
          ],
          { default: 'info' },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

export type ConfigFile = Static<typeof ConfigSchema>;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export type UserConfig = Static<typeof UserSchema>;
export type GroupConfig = Static<typeof GroupSchema>;
export type ClientConfig = Static<typeof ClientSchema>;

export interface Config extends ConfigFile {
  /** Folder holding the database, sandboxes and PKI; relative config paths resolve against it. */
  readonly dataDir: string;
  /** Where the config came from, for messages. */
  readonly source: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

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
  const parsed = validate(ConfigSchema, raw, source);
  const env = options.env ?? process.env;
  const overrides = options.overrides ?? {};
  if (overrides.host !== undefined) parsed.server.host = overrides.host;
  if (overrides.port !== undefined) parsed.server.port = overrides.port;
  const databaseUrl = overrides.databaseUrl ?? env.DIRIGO_DATABASE_URL;
  if (databaseUrl) parsed.database.url = databaseUrl;
  if (overrides.logLevel !== undefined) {
    if (!LOG_LEVELS.includes(overrides.logLevel)) throw new ConfigError(`log level: '${overrides.logLevel}' is not one of ${LOG_LEVELS.join(', ')}`);
    parsed.logging.level = overrides.logLevel as ConfigFile['logging']['level'];
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
  checkRegistry(parsed, source);
  checkClients(parsed, source);
  const idpProblem = checkIdentityProviders(parsed, abs);
  if (idpProblem) throw new ConfigError(`${source}: ${idpProblem}`);
  return deepFreeze({ ...parsed, dataDir, source });
}

function validate<S extends TSchema>(schema: S, raw: unknown, source: string): Static<S> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source}: the top level must be a mapping`);
  }
  const value = Value.Default(schema, structuredClone(raw)) as unknown;
  const errors = [...Value.Errors(schema, value)];
  if (errors.length === 0) return value as Static<S>;
  // Prefer the most specific message: unknown keys are reported by the path of the key itself.
  const unknown = errors.find((e) => e.keyword === 'boolean' && e.schemaPath.endsWith('additionalProperties'));
  if (unknown) throw new ConfigError(`${source}: unknown key '${pointerToKey(unknown.instancePath)}'`);
  const first = errors.find((e) => e.keyword !== 'anyOf') ?? errors[0]!;
  const key = pointerToKey(first.instancePath) || '(top level)';
  throw new ConfigError(`${source}: ${key}: ${first.message}`);
}

function pointerToKey(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '');
}

function checkRegistry(config: ConfigFile, source: string): void {
  const users = new Set<string>();
  const dns = new Set<string>();
  config.registry.users.forEach((u, i) => {
    if (users.has(u.name)) throw new ConfigError(`${source}: registry.users[${i}].name: duplicate user '${u.name}'`);
    users.add(u.name);
    for (const dn of u.dns) {
      if (!dn.startsWith('/')) throw new ConfigError(`${source}: registry.users[${i}].dns: '${dn}' must be written /K=V/K=V`);
      if (dns.has(dn)) throw new ConfigError(`${source}: registry.users[${i}].dns: '${dn}' belongs to two users`);
      dns.add(dn);
    }
  });
  const groups = new Set<string>();
  config.registry.groups.forEach((g, i) => {
    if (groups.has(g.name)) throw new ConfigError(`${source}: registry.groups[${i}].name: duplicate group '${g.name}'`);
    groups.add(g.name);
    g.members.forEach((m, j) => {
      if (!users.has(m)) throw new ConfigError(`${source}: registry.groups[${i}].members[${j}]: unknown user '${m}'`);
    });
  });
}

function checkClients(config: ConfigFile, source: string): void {
  const ids = new Set<string>();
  config.clients.forEach((c, i) => {
    if (ids.has(c.clientId)) throw new ConfigError(`${source}: clients[${i}].clientId: duplicate client '${c.clientId}'`);
    ids.add(c.clientId);
    if (c.type === 'confidential' && !c.secretHash) {
      throw new ConfigError(`${source}: clients[${i}].secretHash: required for a confidential client`);
    }
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Environment lookups the CLI needs (kept here so nothing else reads process.env). */
export const environment = {
  configHome(): string {
    return process.env.XDG_CONFIG_HOME || resolve(process.env.HOME || '.', '.config');
  },
  get(name: string): string | undefined {
    return process.env[name];
  },
};
