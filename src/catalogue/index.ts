/** The file catalogue: namespace, files, metadata fields and search, with POSIX-like permissions. */
export { catalogueRoutes } from './routes.ts';
export { DIRECTORY_NOT_EMPTY } from './errors.ts';
export { CatalogueConfigSchema } from './config-schema.ts';
export { catalogueMigrations } from './migrations.ts';
export { MAX_PATH_PARAM_CHARS, pathParamTooLong, pathProblem } from './paths.ts';
