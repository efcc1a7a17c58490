/**
 * First start of the embedded default: writes `config.yaml`, the development PKI and the demo registry
 * into the data dir. Later starts find `config.yaml` and reuse everything.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { userDn, writeDevelopmentPki } from '../pki/index.ts';
import { generateSecret, hashSecret } from '../registry/index.ts';

export const DEMO_USERS = ['alice', 'bob', 'admin'] as const;
export const DEMO_SETUP = 'Dirigo-Local';
export const DEMO_PUBLIC_CLIENT = 'dirigo-cli';
export const DEMO_CONFIDENTIAL_CLIENT = 'dirigo-portal-demo';

export interface BootstrapResult {
  configFile: string;
  created: boolean;
}

export function configPath(dataDir: string): string {
  return join(dataDir, 'config.yaml');
}

export async function bootstrapDataDir(dataDir: string): Promise<BootstrapResult> {
  const configFile = configPath(dataDir);
  if (existsSync(configFile)) return { configFile, created: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  mkdirSync(join(dataDir, 'sandboxes'), { recursive: true });
  await writeDevelopmentPki(dataDir, [...DEMO_USERS]);

  const credentials: Record<string, string> = {};
  const users = [];
  for (const name of DEMO_USERS) {
    credentials[name] = generateSecret(12);
    users.push({ name, dns: [userDn(name)], email: `${name}@dirigo.example`, passwordHash: await hashSecret(credentials[name]) });
  }
  credentials[DEMO_CONFIDENTIAL_CLIENT] = generateSecret(32);

  const config = {
    server: { host: '127.0.0.1', port: 8443 },
    tls: { cert: 'pki/server.crt', key: 'pki/server.key', caDir: 'pki/trusted' },
    database: { url: 'sqlite:dirigo.db' },
    tokens: { algorithm: 'ES256', accessTokenLifetime: 3600 },
    registry: {
      users,
      groups: [
        { name: 'dirigo_user', members: ['alice', 'bob'], properties: [] },
        { name: 'dirigo_prod', members: ['alice'], properties: ['JobSharing'] },
        { name: 'dirigo_admin', members: ['admin'], properties: ['JobAdministrator', 'CatalogueAdministrator'] },
      ],
      setups: [DEMO_SETUP],
    },
    clients: [
      {
        clientId: DEMO_PUBLIC_CLIENT,
        name: 'Dirigo command line',
        type: 'public',
        redirectUris: ['http://127.0.0.1/callback'],
        grants: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      },
      {
        clientId: DEMO_CONFIDENTIAL_CLIENT,
        name: 'Dirigo demo portal',
        type: 'confidential',
        secretHash: await hashSecret(credentials[DEMO_CONFIDENTIAL_CLIENT]),
        redirectUris: ['https://127.0.0.1:8444/callback'],
        grants: ['authorization_code', 'refresh_token'],
      },
    ],
  };
  writeFileSync(join(dataDir, 'demo-credentials.json'), JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  const header = '# Dirigo configuration, written by the first start. Paths are relative to this file.\n# Reference: README.md, "Configuration".\n';
  writeFileSync(configFile, header + stringify(config), { mode: 0o600 });
  return { configFile, created: true };
}
