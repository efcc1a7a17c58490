/**
 * Joining (docs/registry.md "HTTP API", Joining and AUP): group and registration requests and the AUP.
 * Typed here from the contract until the joining routes are in the generated client.
 */
import { ApiError, authorizedFetch } from '../api.ts';

export type RequestStatus = 'pending' | 'approved' | 'rejected' | 'withdrawn';

export interface JoinRequest {
  id: number;
  kind: 'registration' | 'group';
  user: string;
  group: string;
  status: RequestStatus;
  message?: string;
  email?: string;
  displayName?: string;
  createdAt: string;
  decidedBy?: string;
  decidedAt?: string;
  reason?: string;
}

export interface Aup {
  version: string;
  text: string;
  validDays?: number;
  /** For a signed-in caller: whether they accepted this version (and it is still valid), and when. */
  accepted?: boolean;
  acceptedAt?: string;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) };
  const res = await authorizedFetch(new Request(new URL(path, location.origin), init));
  const text = await res.text();
  const json = text ? (JSON.parse(text) as unknown) : undefined;
  if (!res.ok) {
    const e = (json ?? {}) as { error?: string; error_description?: string };
    throw new ApiError(res.status, e.error ?? 'error', e.error_description ?? `the server answered ${res.status}`);
  }
  return json as T;
}

/** The requests the viewer may see: Admin all, a manager their groups', everyone their own. */
export async function listRequests(status?: RequestStatus): Promise<JoinRequest[]> {
  const answer = await call<{ requests: JoinRequest[] } | JoinRequest[]>('GET', `/registry/requests${status ? `?status=${status}` : ''}`);
  return Array.isArray(answer) ? answer : answer.requests;
}

export const requestGroup = (group: string, message?: string) => call<JoinRequest>('POST', '/registry/requests', { group, ...(message ? { message } : {}) });
export const approveRequest = (id: number) => call<JoinRequest>('POST', `/registry/requests/${id}/approve`, {});
export const rejectRequest = (id: number, reason?: string) => call<JoinRequest>('POST', `/registry/requests/${id}/reject`, reason ? { reason } : {});
export const withdrawRequest = (id: number) => call<unknown>('DELETE', `/registry/requests/${id}`);

/** The current AUP; undefined when the service has none. */
export async function currentAup(): Promise<Aup | undefined> {
  try {
    return await call<Aup>('GET', '/registry/aup');
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return undefined;
    throw e;
  }
}

export const acceptAup = (version: string) => call<unknown>('POST', '/registry/aup/accept', { version });
