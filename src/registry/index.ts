/** Who exists: users, groups, setups and OAuth clients, from the configuration and the database. */
export { Property, Registry, type RegistryUser } from './registry.ts';
/** @public the registry's write API (docs/registry.md) for other domains' routes and pages built on it. */
export { RegistryAdmin } from './admin.ts';
export { seedRegistry } from './seed.ts';
export { ClientRegistry, GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, GRANT_TOKEN_EXCHANGE, issuesRefreshToken, matchesRedirectUri, redirectUriProblem, type NewClient, type OAuthClient, type RegisteredMetadata } from './clients.ts';
export { generateSecret, hashSecret, verifySecret } from './passwords.ts';
export { checkClients, checkRegistry, ClientsConfigSchema, RegistryConfigSchema } from './config-schema.ts';
export { clientAdminCommand } from './client-admin.ts';
export { registryAdminCommand } from './registry-admin-cli.ts';
export { registryMigrations } from './migrations.ts';
export { checkJoiningConfig } from './joining-config.ts';
export { startJoining, type JoiningServices } from './joining/services.ts';
export { registryRoutes } from './routes/index.ts';
