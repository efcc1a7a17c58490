/** The web application: the browser pages served beside the API, and the OAuth client they sign in as. */
export { webAppRoutes } from './routes.ts';
export { WebAppConfigSchema } from './config-schema.ts';
