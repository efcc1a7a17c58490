/** Semver of the REST contract published in /openapi.json (paths stay unversioned, as the README documents them). */
export const API_VERSION = '0.1.0';

/**
 * The servers a client of this API version speaks to, as `dirigo --version` prints it: the same major
 * version, and while the major is 0, the same minor (semver promises nothing across 0.x minors).
 */
export const SPEAKS_TO = API_VERSION.startsWith('0.') ? `${API_VERSION.split('.').slice(0, 2).join('.')}.x` : `${API_VERSION.split('.')[0]}.x`;

/** The response header in which the service names its API version, so that clients can tell an older or newer server. */
export const API_VERSION_HEADER = 'dirigo-api-version';

/** Whether a server announcing API `version` is one this client speaks to (SPEAKS_TO). */
export function speaksTo(version: string): boolean {
  const [major, minor] = version.split('.');
  const [ownMajor, ownMinor] = API_VERSION.split('.');
  return major === ownMajor && (ownMajor !== '0' || minor === ownMinor);
}
