/** One API answer for a page section: loading, the data, or the error; a newer request cancels the older. */
import { useEffect, useState } from 'react';

export type Answer<T> = { state: 'loading' } | { state: 'error'; message: string } | { state: 'done'; data: T };

/** Calls `load` again whenever `key` changes (its inputs as text); undefined `load` means "not asked". */
export function useAnswer<T>(key: string, load: ((signal: AbortSignal) => Promise<T>) | undefined): Answer<T> | undefined {
  const [answer, setAnswer] = useState<Answer<T>>();
  useEffect(() => {
    if (!load) {
      setAnswer(undefined);
      return;
    }
    const stop = new AbortController();
    setAnswer({ state: 'loading' });
    load(stop.signal).then(
      (data) => !stop.signal.aborted && setAnswer({ state: 'done', data }),
      (e: Error) => !stop.signal.aborted && setAnswer({ state: 'error', message: e.message }),
    );
    return () => stop.abort();
    // `key` names everything `load` reads; `load` itself is a new function at every render.
  }, [key, load === undefined]);
  return answer;
}
