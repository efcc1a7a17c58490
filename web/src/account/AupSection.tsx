/**
 * The acceptable use policy (docs/registry.md): its current version and text, whether I accepted it
 * (the account says), and Accept while I have not (no new tokens are issued to me until I do).
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Group, ScrollArea, Stack, Text, Title } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { acceptAup, currentAup, type Aup } from '../registry/join-api.ts';

export function AupSection() {
  const [aup, setAup] = useState<{ policy: Aup; accepted: boolean } | null>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      const [policy, account] = await Promise.all([currentAup(), api.GET('/oauth2/account')]);
      const mine = unwrap(account).aup;
      setAup(policy ? { policy, accepted: mine?.version === policy.version && mine.accepted } : null);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => void load(), [load]);
  const accept = async (version: string) => {
    try {
      await acceptAup(version);
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  if (aup === null) return null;
  return (
    <Stack gap="xs" maw={760} data-testid="aup">
      <Title order={2} size="h4">
        Acceptable use policy
      </Title>
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      {aup && (
        <>
          <Group gap="xs">
            <Text size="sm">Version {aup.policy.version}</Text>
            <Badge color={aup.accepted ? 'green' : 'orange'} variant="dot" data-testid="aup-state">
              {aup.accepted ? 'accepted' : 'not accepted'}
            </Badge>
            {aup.policy.validDays ? <Text size="sm">· accepted again every {aup.policy.validDays} days</Text> : null}
          </Group>
          <ScrollArea.Autosize mah={240} type="auto" tabIndex={0} aria-label={`Acceptable use policy, version ${aup.policy.version}`}>
            <Text size="sm" style={{ whiteSpace: 'pre-wrap' }} data-testid="aup-text">
              {aup.policy.text}
            </Text>
          </ScrollArea.Autosize>
          {!aup.accepted && (
            <Group>
              <Button onClick={() => void accept(aup.policy.version)}>Accept version {aup.policy.version}</Button>
              <Text size="sm">Until you accept it, the service issues you no new token.</Text>
            </Group>
          )}
        </>
      )}
    </Stack>
  );
}
