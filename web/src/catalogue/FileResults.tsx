/**
 * The files a metadata search finds (GET /filecatalogue/directory/<d>/find): a page at a time, the next
 * one appended on request through the answer's cursor. A path opens the file panel.
 */
import { useEffect, useState } from 'react';
import { Alert, Anchor, Button, Stack, Table, Text } from '@mantine/core';
import { authorizedFetch, cataloguePath } from '../api.ts';
import { updateParams } from '../url-state.ts';
import { formatSize } from './format.ts';
import type { operations } from '@dirigo/client/schema';

type FindAnswer = operations['findFiles']['responses'][200]['content']['application/json'];

const PAGE = 100;

async function findPage(under: string, query: URLSearchParams, cursor: string | null): Promise<FindAnswer> {
  const q = new URLSearchParams(query);
  q.set('maxFiles', String(PAGE));
  if (cursor) q.set('cursor', cursor);
  const res = await authorizedFetch(new Request(`/filecatalogue/directory/${cataloguePath(under)}/find?${q.toString()}`, { headers: { accept: 'application/json' } }));
  const body = (await res.json()) as FindAnswer & { error_description?: string };
  if (!res.ok) throw new Error(body.error_description ?? `the server answered ${res.status}`);
  return body;
}

/** `query`: the conditions as query parameters (a repeated key is a range). */
export function FileResults({ under, query }: { under: string; query: URLSearchParams }) {
  const [files, setFiles] = useState<FindAnswer['Files']>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const key = `${under}?${query.toString()}`;

  const load = (cursor: string | null) => {
    setLoading(true);
    findPage(under, query, cursor)
      .then((page) => {
        setFiles((old) => (cursor ? [...old, ...page.Files] : page.Files));
        setNext(page.nextCursor);
        setError(undefined);
      })
      .catch((e: Error) => setError(e.message))
      .finally(() => setLoading(false));
  };
  // A new search starts from its first page.
  useEffect(() => load(null), [key]);

  if (error)
    return (
      <Alert color="red" role="alert">
        {error}
      </Alert>
    );
  return (
    <Stack gap="xs" data-testid="file-results">
      <Text size="sm" fw={600} role="status">
        {loading && files.length === 0 ? 'Searching…' : `${files.length}${next ? '+' : ''} files`}
      </Text>
      <Table.ScrollContainer minWidth={640}>
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>File</Table.Th>
              <Table.Th>Size</Table.Th>
              <Table.Th>Modified</Table.Th>
              <Table.Th>Metadata</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {files.map((f) => (
              <Table.Tr key={f.Path}>
                <Table.Td>
                  <Anchor component="button" type="button" onClick={() => updateParams({ file: f.Path }, false)} style={{ overflowWrap: 'anywhere', textAlign: 'left' }}>
                    {f.Path}
                  </Anchor>
                </Table.Td>
                <Table.Td>{formatSize(f.Size)}</Table.Td>
                <Table.Td>{f.ModificationDate.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</Table.Td>
                <Table.Td>
                  <Text size="sm">
                    {Object.entries(f.Metadata)
                      .map(([k, v]) => `${k} = ${String(v)}`)
                      .join(' · ')}
                  </Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {next && (
        <Button variant="default" onClick={() => load(next)} loading={loading} w="fit-content">
          More files
        </Button>
      )}
    </Stack>
  );
}
