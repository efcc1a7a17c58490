/** Semver of the REST contract published in /openapi.json (paths stay unversioned, as the README documents them). */
export const API_VERSION = '0.1.0';
