/** Downloads: the files under /downloads/ (the single executable matching this server), with their SHA-256. */
export { downloadsRoutes } from './routes.ts';
export { DownloadsConfigSchema } from './config-schema.ts';
