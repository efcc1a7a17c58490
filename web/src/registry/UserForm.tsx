/**
 * Add a user or change one (Admin): names, e-mail, certificate DNs and upstream identities (one per
 * line), expiry date. Only changed fields are sent; the server's refusal is shown.
 */
import { useState } from 'react';
import { Alert, Button, Group, Modal, Stack, Textarea, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { dateInput, endOfDay } from './dates.ts';
import type { RegistryUser } from './types.ts';

const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter(Boolean);

/** `issuer subject` per line; the subject is the last word (issuers are URLs, without spaces). */
function identities(text: string): { issuer: string; subject: string }[] {
  return lines(text).map((l) => {
    const at = l.lastIndexOf(' ');
    return at < 0 ? { issuer: l, subject: '' } : { issuer: l.slice(0, at).trim(), subject: l.slice(at + 1) };
  });
}

export function UserForm({ user, onDone, onCancel }: { user?: RegistryUser; onDone(name: string): void; onCancel(): void }) {
  const [name, setName] = useState(user?.name ?? '');
  const [email, setEmail] = useState(user?.email ?? '');
  const [displayName, setDisplayName] = useState(user?.displayName ?? '');
  const [dns, setDns] = useState(user?.dns.join('\n') ?? '');
  const [ids, setIds] = useState(user?.identities.map((i) => `${i.issuer} ${i.subject}`).join('\n') ?? '');
  const [expires, setExpires] = useState(dateInput(user?.expiresAt));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const save = async () => {
    setBusy(true);
    try {
      if (user) {
        // Only what changed: the audit log then shows the change and nothing else.
        const next = {
          email: email.trim() || null,
          displayName: displayName.trim() || null,
          dns: lines(dns),
          identities: identities(ids),
          expiresAt: expires ? endOfDay(expires) : null,
        };
        const was = { email: user.email ?? null, displayName: user.displayName ?? null, dns: user.dns, identities: user.identities, expiresAt: user.expiresAt ?? null };
        const body = Object.fromEntries(Object.entries(next).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(was[k as keyof typeof was])));
        unwrap(await api.PATCH('/registry/users/{name}', { params: { path: { name: user.name } }, body }));
        onDone(user.name);
      } else {
        const body = {
          name: name.trim(),
          ...(email.trim() ? { email: email.trim() } : {}),
          ...(displayName.trim() ? { displayName: displayName.trim() } : {}),
          ...(lines(dns).length ? { dns: lines(dns) } : {}),
          ...(lines(ids).length ? { identities: identities(ids) } : {}),
          ...(expires ? { expiresAt: endOfDay(expires) } : {}),
        };
        const created = unwrap(await api.POST('/registry/users', { body }));
        onDone(created.name);
      }
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };

  return (
    <Modal opened onClose={onCancel} title={user ? `Edit user ${user.name}` : 'Add a user'} centered size="lg" closeButtonProps={{ 'aria-label': 'Close, saving nothing' }}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <Stack gap="sm">
          {error && (
            <Alert color="red" role="alert">
              {error}
            </Alert>
          )}
          {!user && <TextInput label="User name" description="1–64 of A–Z a–z 0–9 _ . -" required maxLength={64} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />}
          <TextInput label="E-mail" type="email" maxLength={320} value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
          <TextInput label="Display name" maxLength={256} value={displayName} onChange={(e) => setDisplayName(e.currentTarget.value)} />
          <Textarea label="Certificate DNs" description="One per line, written /K=V/K=V" autosize minRows={2} value={dns} onChange={(e) => setDns(e.currentTarget.value)} />
          <Textarea label="Upstream identities" description="One per line: issuer, a space, subject" autosize minRows={1} value={ids} onChange={(e) => setIds(e.currentTarget.value)} />
          <TextInput label="Expires on" description="UTC; empty: never. No tokens after this day." type="date" value={expires} onChange={(e) => setExpires(e.currentTarget.value)} w={220} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={onCancel}>
              Cancel
            </Button>
            <Button type="submit" loading={busy}>
              {user ? 'Save' : 'Add user'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
