/** Joining (docs/registry.md "HTTP API", Joining and AUP): group and registration requests and the AUP. */
import type { operations } from '@dirigo/client/schema';
import { api, ApiError, unwrap } from '../api.ts';

export type JoinRequest = operations['listRequests']['responses'][200]['content']['application/json']['requests'][number];
export type Aup = operations['getAup']['responses'][200]['content']['application/json'];

/** The requests the viewer may see: Admin all, a manager their groups', everyone their own; newest first. */
export async function listRequests(): Promise<JoinRequest[]> {
  return unwrap(await api.GET('/registry/requests', { params: { query: { per_page: 500 } } })).requests;
}

export const requestGroup = async (group: string, message?: string) => unwrap(await api.POST('/registry/requests', { body: { group, ...(message ? { message } : {}) } }));
export const approveRequest = async (id: number) => unwrap(await api.POST('/registry/requests/{id}/approve', { params: { path: { id } }, body: {} }));
export const rejectRequest = async (id: number, reason?: string) => unwrap(await api.POST('/registry/requests/{id}/reject', { params: { path: { id } }, body: reason ? { reason } : {} }));
export const withdrawRequest = async (id: number) => unwrap(await api.DELETE('/registry/requests/{id}', { params: { path: { id } } }));

/** The current AUP; undefined when the service has none (404). */
export async function currentAup(): Promise<Aup | undefined> {
  try {
    return unwrap(await api.GET('/registry/aup'));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return undefined;
    throw e;
  }
}

export const acceptAup = async (version: string) => unwrap(await api.POST('/registry/aup/accept', { body: { version } }));
