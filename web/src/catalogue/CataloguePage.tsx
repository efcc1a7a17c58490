/**
 * The file catalogue: a directory tree from `/`, the listing of the open directory with full records,
 * a file's attributes and metadata, and the metadata search. The open directory and file are in the
 * address.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Anchor, Breadcrumbs, Drawer, Grid, NavLink, Paper, Stack, Table, Tabs, Text, Title } from '@mantine/core';
import { api, cataloguePath, unwrap } from '../api.ts';
import { updateParams } from '../url-state.ts';
import { MetadataSearch } from './MetadataSearch.tsx';
import { formatSize, modeText } from './format.ts';
import { formatTimestamp } from '../time-format.ts';
import { FieldTable } from '../FieldTable.tsx';
import type { operations } from '@dirigo/client/schema';

type Listing = operations['listDirectory']['responses'][200]['content']['application/json'];
type FileAttributes = operations['getFileAttributes']['responses'][200]['content']['application/json'];

function parentsOf(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return ['/', ...parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`)];
}

/** One directory of the tree; its children are read when it is first opened. */
function TreeNode({ path, name, open, current }: { path: string; name: string; open: ReadonlySet<string>; current: string }) {
  const [children, setChildren] = useState<{ Path: string; Name: string }[]>();
  const expanded = open.has(path);
  useEffect(() => {
    if (!expanded || children) return;
    void api
      .GET('/filecatalogue/directory/{path}', { params: { path: { path: cataloguePath(path) } } })
      .then((r) => setChildren(unwrap(r).SubDirs))
      .catch(() => setChildren([]));
  }, [expanded, children, path]);
  return (
    <NavLink
      label={name}
      active={current === path}
      opened={expanded}
      onClick={() => updateParams({ path, file: undefined }, false)}
      childrenOffset={14}
      component="button"
      aria-current={current === path ? 'page' : undefined}
    >
      {expanded && children ? children.map((c) => <TreeNode key={c.Path} path={c.Path} name={c.Name} open={open} current={current} />) : null}
    </NavLink>
  );
}

function FilePanel({ path, onClose }: { path: string; onClose(): void }) {
  const [file, setFile] = useState<FileAttributes>();
  const [metadata, setMetadata] = useState<Record<string, string | number>>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const p = { params: { path: { path: cataloguePath(path) } } };
    void Promise.all([api.GET('/filecatalogue/file/{path}/attributes', p), api.GET('/filecatalogue/file/{path}/metadata', p)])
      .then(([a, m]) => {
        setFile(unwrap(a));
        setMetadata(unwrap(m));
      })
      .catch((e: Error) => setError(e.message));
  }, [path]);
  return (
    <Drawer opened onClose={onClose} position="right" size="lg" title={path} closeButtonProps={{ 'aria-label': 'Close the file panel' }}>
      {error && <Alert color="red">{error}</Alert>}
      {file && (
        <Stack data-testid="file-panel">
          <Title order={2} size="h4">
            Attributes
          </Title>
          <FieldTable rows={Object.entries(file).map(([k, v]) => [k, k === 'Mode' ? modeText(Number(v)) : k === 'Size' ? formatSize(Number(v)) : k.endsWith('Date') ? formatTimestamp(String(v)) : String(v)])} />
          <Title order={2} size="h4">
            Metadata (own and inherited)
          </Title>
          <FieldTable rows={Object.entries(metadata ?? {}).map(([k, v]) => [k, String(v)])} />
        </Stack>
      )}
    </Drawer>
  );
}

function DirectoryListing({ path }: { path: string }) {
  const [listing, setListing] = useState<Listing>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      setListing(unwrap(await api.GET('/filecatalogue/directory/{path}', { params: { path: { path: cataloguePath(path) }, query: { verbose: true } } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [path]);
  useEffect(() => void load(), [load]);
  if (error)
    return (
      <Alert color="red" role="alert">
        {error}
      </Alert>
    );
  if (!listing) return <Text>Loading…</Text>;
  return (
    <Stack gap="sm">
      {listing.Metadata && Object.keys(listing.Metadata).length > 0 && (
        <Text size="sm">
          <strong>Metadata:</strong>{' '}
          {Object.entries(listing.Metadata)
            .map(([k, v]) => `${k} = ${String(v)}`)
            .join(' · ')}
        </Text>
      )}
      <Table.ScrollContainer minWidth={640}>
        <Table striped highlightOnHover data-testid="directory-listing">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Size</Table.Th>
              <Table.Th>Owner</Table.Th>
              <Table.Th>Group</Table.Th>
              <Table.Th>Mode</Table.Th>
              <Table.Th>Modified</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {listing.SubDirs.map((d) => (
              <Table.Tr key={d.Path}>
                <Table.Td>
                  <Anchor component="button" type="button" onClick={() => updateParams({ path: d.Path, file: undefined }, false)}>
                    {d.Name}/
                  </Anchor>
                </Table.Td>
                <Table.Td />
                <Table.Td>{d.Owner}</Table.Td>
                <Table.Td>{d.OwnerGroup}</Table.Td>
                <Table.Td ff="monospace">{d.Mode !== undefined ? modeText(d.Mode, true) : ''}</Table.Td>
                <Table.Td>{d.ModificationDate && formatTimestamp(d.ModificationDate)}</Table.Td>
              </Table.Tr>
            ))}
            {listing.Files.map((f) => (
              <Table.Tr key={f.Path}>
                <Table.Td>
                  <Anchor component="button" type="button" onClick={() => updateParams({ file: f.Path }, false)}>
                    {f.Name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{formatSize(f.Size)}</Table.Td>
                <Table.Td>{f.Owner}</Table.Td>
                <Table.Td>{f.OwnerGroup}</Table.Td>
                <Table.Td ff="monospace">{f.Mode !== undefined ? modeText(f.Mode) : ''}</Table.Td>
                <Table.Td>{f.ModificationDate && formatTimestamp(f.ModificationDate)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {listing.SubDirs.length + listing.Files.length === 0 && <Text size="sm">This directory is empty.</Text>}
    </Stack>
  );
}

export function CataloguePage({ params }: { params: URLSearchParams }) {
  const path = params.get('path') ?? '/';
  const file = params.get('file') ?? undefined;
  const open = new Set(parentsOf(path));
  const crumbs = parentsOf(path);
  return (
    <Stack gap="md">
      <Title order={1} size="h2">
        File catalogue
      </Title>
      <Tabs value={params.get('tab') ?? 'browse'} onChange={(tab) => updateParams({ tab: tab === 'browse' ? undefined : (tab ?? undefined) })}>
        <Tabs.List>
          <Tabs.Tab value="browse">Browse</Tabs.Tab>
          <Tabs.Tab value="search">Search by metadata</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="browse" pt="md">
          <Grid>
            <Grid.Col span={{ base: 12, md: 3 }}>
              <Paper withBorder p="xs" component="nav" aria-label="Directory tree">
                <TreeNode path="/" name="/" open={open} current={path} />
              </Paper>
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 9 }}>
              <Stack gap="xs">
                <Breadcrumbs separator="/" aria-label="Path">
                  {crumbs.map((c) => (
                    <Anchor key={c} component="button" type="button" onClick={() => updateParams({ path: c, file: undefined }, false)}>
                      {c === '/' ? 'root' : c.split('/').at(-1)}
                    </Anchor>
                  ))}
                </Breadcrumbs>
                <DirectoryListing path={path} />
              </Stack>
            </Grid.Col>
          </Grid>
        </Tabs.Panel>
        <Tabs.Panel value="search" pt="md">
          <MetadataSearch params={params} />
        </Tabs.Panel>
      </Tabs>
      {file && <FilePanel path={file} onClose={() => updateParams({ file: undefined }, false)} />}
    </Stack>
  );
}
