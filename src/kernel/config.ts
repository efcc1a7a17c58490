/**
 * Configuration primitives: the sections every part of the service shares (server, TLS, database,
 * logging), the validation that names the offending key, and the one place that reads process.env.
 * Each domain exports the schema of its own section and adds its type to {@link AppConfig}; the
 * composition root (src/app/config.ts) assembles the whole schema and loads the file.
 */
import { resolve } from 'node:path';
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

export const ServerConfigSchema = Type.Object(
  {
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8443 }),
    /** External URL (issuer, links); derived from host and the bound port when absent. */
    publicUrl: Type.Optional(Type.String({ pattern: '^https://' })),
    /** Largest request body of a route that sets none of its own (bytes). */
    bodyLimit: Type.Integer({ minimum: 1024, default: 1048576 }),
    /** Largest form body (bytes) of the device, revocation and introspection endpoints and of the sign-in, consent, device and sign-out pages. */
    formBodyLimit: Type.Integer({ minimum: 1024, default: 65536 }),
    maxHeaderSize: Type.Integer({ minimum: 1024, default: 16384 }),
    /** Cross-origin requests from browser applications served elsewhere (none allowed by default). */
    cors: Type.Object(
      {
        /** Exact origins (`https://app.example.org`), or `*` for any origin without credentials. */
        origins: Type.Array(Type.String({ pattern: '^(\\*|https?://[^/?#\\s]+)$' }), { default: [] }),
        /** Whether the listed origins may send cookies and client certificates; never with `*`. */
        credentials: Type.Boolean({ default: false }),
        /** How long browsers may cache a preflight answer, in seconds. */
        maxAge: Type.Integer({ minimum: 0, maximum: 86400, default: 600 }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
);

export const TlsConfigSchema = Type.Object(
  {
    cert: Type.String({ default: 'pki/server.crt' }),
    key: Type.String({ default: 'pki/server.key' }),
    /** Folder of PEM files: the CAs trusted to issue user certificates. */
    caDir: Type.String({ default: 'pki/trusted' }),
  },
  { additionalProperties: false, default: {} },
);

export const DatabaseConfigSchema = Type.Object(
  {
    /** `sqlite:<file>` (relative to the data dir) or `postgres://...`. */
    url: Type.String({ default: 'sqlite:dirigo.db' }),
  },
  { additionalProperties: false, default: {} },
);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LoggingConfigSchema = Type.Object(
  {
    level: Type.Union(
      [Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')],
      { default: 'info' },
    ),
  },
  { additionalProperties: false, default: {} },
);

/** The sections of config.yaml that belong to no domain. */
export const CoreConfigSections = {
  server: ServerConfigSchema,
  tls: TlsConfigSchema,
  database: DatabaseConfigSchema,
  logging: LoggingConfigSchema,
};

export interface CoreConfig {
  server: Static<typeof ServerConfigSchema>;
  tls: Static<typeof TlsConfigSchema>;
  database: Static<typeof DatabaseConfigSchema>;
  logging: Static<typeof LoggingConfigSchema>;
  /** Folder holding the database, sandboxes and PKI; relative config paths resolve against it. */
  readonly dataDir: string;
  /** Where the config came from, for messages. */
  readonly source: string;
}

/**
 * The validated, frozen configuration. Each domain adds its section by declaration merging, e.g.
 * `declare module '../kernel/config.ts' { interface AppConfig { jobs: JobsConfig } }`, so that this
 * module needs no domain while every domain sees the whole shape.
 */
export interface AppConfig extends CoreConfig {}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Applies the schema's defaults to a copy of `raw` and checks it.
 * @throws ConfigError naming the first bad key (an unknown key by its own path).
 */
export function validateConfig<S extends TSchema>(schema: S, raw: unknown, source: string): Static<S> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source}: the top level must be a mapping`);
  }
  const value = Value.Default(schema, structuredClone(raw)) as unknown;
  const errors = [...Value.Errors(schema, value)];
  if (errors.length === 0) return value as Static<S>;
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

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Environment lookups (kept here so nothing else reads process.env). */
export const environment = {
  configHome(): string {
    return process.env.XDG_CONFIG_HOME || resolve(process.env.HOME || '.', '.config');
  },
  get(name: string): string | undefined {
    return process.env[name];
  },
  /** The whole environment, for the composition root's DIRIGO_DATABASE_URL override. */
  all(): Record<string, string | undefined> {
    return process.env;
  },
};
