/** The file catalogue: namespace, files, metadata fields and search, with POSIX-like permissions. */
export { catalogueRoutes } from './routes.ts';
export { CatalogueConfigSchema } from './config-schema.ts';
export { catalogueMigrations } from './migrations.ts';
