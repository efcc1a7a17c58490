/**
 * The metadata search form, built from the fields the catalogue defines (GET /filecatalogue/metadata):
 * each condition has the operators of its field's type and offers the values present among the
 * directories compatible with the other conditions. It searches directories (with their counts) or files
 * (by directory and file fields together, FileResults.tsx). Conditions and the choice live in the address
 * (`c=Run|>=|1`, `find=files`).
 */
import { useEffect, useMemo, useState } from 'react';
import { ActionIcon, Alert, Anchor, Button, Group, NumberInput, SegmentedControl, Select, Stack, Table, Text, TextInput, MultiSelect } from '@mantine/core';
import { authorizedFetch, cataloguePath } from '../api.ts';
import { updateParams } from '../url-state.ts';
import { formatSize } from './format.ts';
import { FileResults } from './FileResults.tsx';
import type { operations } from '@dirigo/client/schema';

type Fields = operations['getCompatibleMetadata']['responses'][200]['content']['application/json'];
type SearchAnswer = operations['searchDirectories']['responses'][200]['content']['application/json'];

interface Condition {
  field: string;
  op: string;
  value: string;
}

const ORDERED_OPS = ['=', '!=', '<', '<=', '>', '>='];
const STRING_OPS = ['in', 'nin', '=', '!='];

function readConditions(params: URLSearchParams): Condition[] {
  return params.getAll('c').flatMap((c) => {
    const [field, op, ...rest] = c.split('|');
    return field && op ? [{ field, op, value: rest.join('|') }] : [];
  });
}

function conditionQuery(conditions: Condition[]): URLSearchParams {
  const q = new URLSearchParams();
  for (const c of conditions) if (c.field && c.value !== '') q.append(c.field, `${c.op}|${c.value}`);
  return q;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await authorizedFetch(new Request(url, { headers: { accept: 'application/json' } }));
  const body = (await res.json()) as T & { error_description?: string };
  if (!res.ok) throw new Error(body.error_description ?? `the server answered ${res.status}`);
  return body;
}

function ValueInput({ type, condition, values, onChange }: { type: string; condition: Condition; values: (string | number)[]; onChange(v: string): void }) {
  const label = `Value of ${condition.field || 'the condition'}`;
  if (type === 'string' && (condition.op === 'in' || condition.op === 'nin')) {
    return <MultiSelect aria-label={label} data={values.map(String)} value={condition.value ? condition.value.split(',') : []} onChange={(v) => onChange(v.join(','))} searchable w={260} />;
  }
  if (type === 'string') return <Select aria-label={label} data={values.map(String)} value={condition.value || null} onChange={(v) => onChange(v ?? '')} searchable w={260} />;
  if (type === 'int' || type === 'float') {
    return <NumberInput aria-label={label} value={condition.value} onChange={(v) => onChange(String(v))} allowDecimal={type === 'float'} w={160} />;
  }
  return <TextInput aria-label={label} placeholder="2026-01-31T00:00:00Z" value={condition.value} onChange={(e) => onChange(e.currentTarget.value)} w={220} />;
}

export function MetadataSearch({ params }: { params: URLSearchParams }) {
  const under = params.get('under') ?? '/';
  const findFiles = params.get('find') === 'files';
  const applied = useMemo(() => readConditions(params), [params]);
  const [conditions, setConditions] = useState<Condition[]>(applied.length ? applied : [{ field: '', op: '=', value: '' }]);
  const [fields, setFields] = useState<Fields>({});
  const [result, setResult] = useState<SearchAnswer>();
  const [error, setError] = useState<string>();

  // Values offered: those compatible with the directory conditions already complete (file fields offer
  // every value they hold: the service's compatible values select by directory fields only).
  const compatibleKey = conditionQuery(conditions.filter((c) => fields[c.field]?.Scope === 'directory')).toString();
  useEffect(() => {
    void getJson<Fields>(`/filecatalogue/metadata?${compatibleKey}`)
      .then((f) => setFields((old) => ({ ...old, ...f })))
      .catch(() => undefined);
  }, [compatibleKey]);

  useEffect(() => {
    if (!applied.length || findFiles) return;
    void getJson<SearchAnswer>(`/filecatalogue/directory/${cataloguePath(under)}/search?${conditionQuery(applied).toString()}`)
      .then((r) => {
        setResult(r);
        setError(undefined);
      })
      .catch((e: Error) => setError(e.message));
  }, [applied, under, findFiles]);

  // Files are selected by directory and file fields, directories by directory fields only.
  const usable = Object.entries(fields).filter(([, f]) => findFiles || f.Scope === 'directory');
  const appliedQuery = useMemo(() => conditionQuery(applied), [applied]);
  const set = (i: number, change: Partial<Condition>) => setConditions(conditions.map((c, j) => (j === i ? { ...c, ...change } : c)));

  return (
    <Stack gap="md">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          updateParams({ c: conditions.filter((c) => c.field && c.value !== '').map((c) => `${c.field}|${c.op}|${c.value}`) }, false);
        }}
        aria-label="Metadata search"
      >
        <Stack gap="xs">
          <Group gap="md" align="flex-end">
            <TextInput label="Under" value={under} onChange={(e) => updateParams({ under: e.currentTarget.value || undefined })} w={300} />
            <Stack gap={4}>
              <Text size="sm" fw={500} id="search-for">
                Search for
              </Text>
              <SegmentedControl
                aria-labelledby="search-for"
                data={[
                  { value: 'directories', label: 'Directories' },
                  { value: 'files', label: 'Files' },
                ]}
                value={findFiles ? 'files' : 'directories'}
                onChange={(v) => updateParams({ find: v === 'files' ? 'files' : undefined }, false)}
              />
            </Stack>
          </Group>
          {conditions.map((c, i) => {
            const type = fields[c.field]?.Type ?? 'string';
            const ops = type === 'string' ? STRING_OPS : ORDERED_OPS;
            return (
              <Group key={i} gap="xs" align="flex-end" data-testid="condition">
                <Select
                  label={i === 0 ? 'Field' : undefined}
                  aria-label="Field"
                  data={usable.map(([name, f]) => ({ value: name, label: f.Scope === 'file' ? `${name} (${f.Type}, file)` : `${name} (${f.Type})` }))}
                  value={c.field || null}
                  onChange={(v) => set(i, { field: v ?? '', op: fields[v ?? '']?.Type === 'string' ? 'in' : '=', value: '' })}
                  searchable
                  w={200}
                />
                <Select label={i === 0 ? 'Operator' : undefined} aria-label="Operator" data={ops} value={c.op} onChange={(v) => set(i, { op: v ?? ops[0]! })} allowDeselect={false} w={100} />
                <ValueInput type={type} condition={c} values={fields[c.field]?.Values ?? []} onChange={(value) => set(i, { value })} />
                <ActionIcon variant="subtle" color="red" aria-label="Remove this condition" onClick={() => setConditions(conditions.filter((_, j) => j !== i))} mb={4}>
                  ✕
                </ActionIcon>
              </Group>
            );
          })}
          <Group>
            <Button variant="default" onClick={() => setConditions([...conditions, { field: '', op: '=', value: '' }])}>
              Add a condition
            </Button>
            <Button type="submit">Search</Button>
          </Group>
        </Stack>
      </form>
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      {findFiles && applied.length > 0 && <FileResults under={under} query={appliedQuery} />}
      {result && !findFiles && (
        <Stack gap="xs" data-testid="search-results">
          <Text size="sm" fw={600} role="status">
            {result.Directories.length} directories, {result.Files} files, {formatSize(result.Size)} (each file counted once)
          </Text>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Directory</Table.Th>
                <Table.Th>Files</Table.Th>
                <Table.Th>Size</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {result.Directories.map((d) => (
                <Table.Tr key={d.Path}>
                  <Table.Td>
                    <Anchor component="button" type="button" onClick={() => updateParams({ tab: undefined, path: d.Path }, false)}>
                      {d.Path}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{d.Files}</Table.Td>
                  <Table.Td>{formatSize(d.Size)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Stack>
      )}
    </Stack>
  );
}
