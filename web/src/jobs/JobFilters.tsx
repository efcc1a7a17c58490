/**
 * Filters of the job monitor: several values per attribute, offered from the values present (the
 * server's counts per value), and a time range on one time attribute.
 */
import { useState } from 'react';
import { Button, Group, MultiSelect, Select, Switch, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { FILTERABLE, TIME_ATTRIBUTES, type Attribute } from './attributes.ts';
import type { JobView } from './query.ts';

export interface JobFiltersProps {
  view: JobView;
  onChange(changes: Record<string, string | string[] | undefined>): void;
}

function ValueFilter({ attribute, values, allOwners, onChange }: { attribute: Attribute; values: string[]; allOwners: boolean; onChange(v: string[]): void }) {
  const [present, setPresent] = useState<{ value: string; label: string }[] | undefined>();
  const load = async () => {
    const query = { groupBy: [attribute], ...(allOwners ? { allOwners: true } : {}) } as never;
    const answer = unwrap(await api.GET('/jobs/summary', { params: { query } }));
    setPresent(
      answer.summary
        .filter((s) => s[attribute] !== null && s[attribute] !== undefined)
        .map((s) => ({ value: String(s[attribute]), label: `${String(s[attribute])} (${s.count})` })),
    );
  };
  const data = [...(present ?? []), ...values.filter((v) => !present?.some((p) => p.value === v)).map((v) => ({ value: v, label: v }))];
  return (
    <MultiSelect
      label={attribute}
      placeholder="any"
      data={data}
      value={values}
      onChange={onChange}
      onDropdownOpen={() => void load().catch(() => setPresent([]))}
      searchable
      clearable
      w={200}
      nothingFoundMessage={present ? 'no jobs' : 'loading…'}
      comboboxProps={{ withinPortal: true }}
    />
  );
}

export function JobFilters({ view, onChange }: JobFiltersProps) {
  const [shown, setShown] = useState<Attribute[]>(() => [...new Set<Attribute>(['Status', 'Site', ...(Object.keys(view.filters) as Attribute[])])]);
  return (
    <Group align="flex-end" gap="sm" wrap="wrap">
      {shown.map((a) => (
        <ValueFilter key={a} attribute={a} values={view.filters[a] ?? []} allOwners={view.allOwners} onChange={(v) => onChange({ [a]: v, cursor: undefined })} />
      ))}
      <Select
        label="Filter on"
        placeholder="attribute"
        data={FILTERABLE.filter((a) => !shown.includes(a))}
        value={null}
        onChange={(a) => a && setShown([...shown, a as Attribute])}
        w={170}
      />
      <Select
        label="Time attribute"
        data={[...TIME_ATTRIBUTES]}
        value={view.timeAttribute}
        onChange={(a) => onChange({ time: a ?? undefined, cursor: undefined })}
        allowDeselect={false}
        w={170}
      />
      <TextInput type="datetime-local" label="From" value={view.from ?? ''} onChange={(e) => onChange({ from: e.currentTarget.value || undefined, cursor: undefined })} w={210} />
      <TextInput type="datetime-local" label="To" value={view.to ?? ''} onChange={(e) => onChange({ to: e.currentTarget.value || undefined, cursor: undefined })} w={210} />
      <Switch label="Every owner I may see" checked={view.allOwners} onChange={(e) => onChange({ allOwners: e.currentTarget.checked ? 'true' : undefined, cursor: undefined })} mb={8} />
      <Button variant="subtle" onClick={() => onChange(Object.fromEntries([...Object.keys(view.filters), 'from', 'to', 'cursor'].map((k) => [k, undefined])))}>
        Clear filters
      </Button>
    </Group>
  );
}
