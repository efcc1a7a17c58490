/** A user's effective status: active, suspended, expired (its date passed) or removed. */
import { Badge } from '@mantine/core';
import type { RegistryUser } from './types.ts';

const COLOURS: Record<string, string> = { active: 'green', suspended: 'orange', expired: 'red', removed: 'gray' };

export function effectiveStatus(u: Pick<RegistryUser, 'status' | 'barred'>): string {
  return u.status === 'active' && u.barred?.startsWith('expired') ? 'expired' : u.status;
}

export function UserStatusBadge({ user }: { user: Pick<RegistryUser, 'status' | 'barred'> }) {
  const status = effectiveStatus(user);
  return (
    <Badge color={COLOURS[status] ?? 'gray'} variant="dot" styles={{ root: { minWidth: 'max-content' } }}>
      {status}
    </Badge>
  );
}
