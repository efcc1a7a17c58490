/**
 * The acceptable use policy (docs/registry.md): its current version and text, whether I accepted it,
 * and Accept while I have not (tokens are refused until I do).
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Group, ScrollArea, Stack, Text, Title } from '@mantine/core';
import { acceptAup, currentAup, type Aup } from '../registry/join-api.ts';
import { formatTimestamp } from '../time-format.ts';

export function AupSection() {
  const [aup, setAup] = useState<Aup | null>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      setAup((await currentAup()) ?? null);
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
            <Text size="sm">Version {aup.version}</Text>
            {aup.accepted ? (
              <Badge color="green" variant="dot" data-testid="aup-state">
                accepted{aup.acceptedAt ? ` ${formatTimestamp(aup.acceptedAt)}` : ''}
              </Badge>
            ) : (
              <Badge color="orange" variant="dot" data-testid="aup-state">
                not accepted
              </Badge>
            )}
            {aup.validDays ? <Text size="sm">· to be accepted again every {aup.validDays} days</Text> : null}
          </Group>
          <ScrollArea.Autosize mah={240} type="auto" tabIndex={0} aria-label={`Acceptable use policy, version ${aup.version}`}>
            <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
              {aup.text}
            </Text>
          </ScrollArea.Autosize>
          {!aup.accepted && (
            <Group>
              <Button onClick={() => void accept(aup.version)}>Accept version {aup.version}</Button>
              <Text size="sm">Until you accept it, the service issues you no new token.</Text>
            </Group>
          )}
        </>
      )}
    </Stack>
  );
}
