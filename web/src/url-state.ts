/**
 * The application's address is its state: the page is the path under the base, and filters, sort, page
 * and the selected item are query parameters, so a reload or a shared link shows the same view.
 */
import { useSyncExternalStore } from 'react';

const CHANGE = 'dirigo:navigate';

function snapshot(): string {
  return location.pathname + location.search;
}

function subscribe(notify: () => void): () => void {
  window.addEventListener('popstate', notify);
  window.addEventListener(CHANGE, notify);
  return () => {
    window.removeEventListener('popstate', notify);
    window.removeEventListener(CHANGE, notify);
  };
}

/** The base path the server set (`<base href>`), e.g. `/app/`. */
export function basePath(): string {
  return new URL(document.baseURI).pathname;
}

export interface Location {
  /** The page: the path below the base, without slashes (`''` is the job monitor). */
  page: string;
  params: URLSearchParams;
}

export function useLocation(): Location {
  const current = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(current, location.origin);
  const page = url.pathname.startsWith(basePath()) ? url.pathname.slice(basePath().length).replace(/\/$/, '') : '';
  return { page, params: url.searchParams };
}

/** Goes to `page` with `params`; replace keeps the history entry (for filter edits). */
export function navigate(page: string, params?: URLSearchParams | Record<string, string>, replace = false): void {
  const search = params ? new URLSearchParams(params).toString() : '';
  const target = `${basePath()}${page}${search ? `?${search}` : ''}`;
  if (target === snapshot()) return;
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  window.dispatchEvent(new Event(CHANGE));
}

/** Changes some query parameters of the current page (undefined or empty removes one). */
export function updateParams(changes: Record<string, string | string[] | undefined>, replace = true): void {
  const url = new URL(location.href);
  for (const [key, value] of Object.entries(changes)) {
    url.searchParams.delete(key);
    for (const v of Array.isArray(value) ? value : value ? [value] : []) url.searchParams.append(key, v);
  }
  const page = url.pathname.startsWith(basePath()) ? url.pathname.slice(basePath().length) : '';
  navigate(page, url.searchParams, replace);
}
