/** Sign-in through upstream OpenID Connect providers (federated login). */
export { federationRoutes } from './routes.ts';
export { checkIdentityProviders, IdentityProvidersConfigSchema } from './config-schema.ts';
export { federationMigrations } from './migrations.ts';
