/**
 * The Accounting page's controls, all kept in the address: quick ranges or a fixed from/to, interval,
 * the dimension usage is stacked by, the measure, filters on each dimension (values offered from the
 * usage of the range, with their job counts), and every owner for groups that may see them. Each choice
 * is a new history entry, so Back returns to the previous view; typing a date replaces the entry.
 */
import { useState } from 'react';
import { Button, Group, MultiSelect, SegmentedControl, Select, Stack, Switch, TextInput } from '@mantine/core';
import { fetchUsage } from './data.ts';
import { DIMENSION_LABELS, DIMENSIONS, INTERVALS, MEASURES, RANGES, type AccountingView, type Dimension, type Measure, type QuickRange } from './view.ts';

export type Changes = Record<string, string | string[] | undefined>;

function ValueFilter({ dimension, view, now, onChange }: { dimension: Dimension; view: AccountingView; now: number; onChange(values: string[]): void }) {
  const [present, setPresent] = useState<{ value: string; label: string }[]>();
  const values = view.filters[dimension] ?? [];
  const load = async () => {
    // The values of the range, with the other filters left as they are (those of this one dropped).
    const answer = await fetchUsage({ ...view, filters: { ...view.filters, [dimension]: undefined } }, { groupBy: dimension, total: true, now }, new AbortController().signal);
    setPresent(answer.rows.filter((r) => r.Group).map((r) => ({ value: r.Group!, label: `${r.Group} (${r.Jobs})` })));
  };
  const data = [...(present ?? []), ...values.filter((v) => !present?.some((p) => p.value === v)).map((v) => ({ value: v, label: v }))];
  return (
    <MultiSelect
      label={DIMENSION_LABELS[dimension]}
      placeholder={values.length ? undefined : 'any'}
      data={data}
      value={values}
      onChange={onChange}
      onDropdownOpen={() => void load().catch(() => setPresent([]))}
      searchable
      clearable
      w={180}
      nothingFoundMessage={present ? 'no usage' : 'loading…'}
    />
  );
}

const rangeChoices = [...Object.entries(RANGES).map(([value, r]) => ({ value, label: r.label })), { value: 'custom', label: 'From–to' }];

/** A datetime-local value from an ISO time (UTC, to the minute). */
const localValue = (iso: string | undefined) => (iso ? iso.slice(0, 16) : '');

export function AccountingFilters({ view, now, mayAllOwners, onChange }: { view: AccountingView; now: number; mayAllOwners: boolean; onChange(changes: Changes, replace?: boolean): void }) {
  const chooseRange = (v: string) =>
    onChange(v === 'custom' ? { range: undefined, from: localValue(new Date(now - 30 * 86400_000).toISOString()) } : { range: v as QuickRange, from: undefined, to: undefined });
  return (
    <Stack gap="sm">
      <Group align="flex-end" gap="sm" wrap="wrap">
        {/* Side by side from tablet width up; a menu on a phone, where five segments do not fit. */}
        <SegmentedControl aria-label="Time range" data={rangeChoices} value={view.range ?? 'custom'} onChange={chooseRange} visibleFrom="sm" />
        <Select label="Time range" data={rangeChoices} value={view.range ?? 'custom'} onChange={(v) => v && chooseRange(v)} allowDeselect={false} w={140} hiddenFrom="sm" />
        {!view.range && (
          <>
            <TextInput type="datetime-local" label="From (UTC)" value={localValue(view.from)} onChange={(e) => onChange({ from: e.currentTarget.value || undefined }, true)} w={210} />
            <TextInput type="datetime-local" label="To (UTC)" value={localValue(view.to)} onChange={(e) => onChange({ to: e.currentTarget.value || undefined }, true)} w={210} />
          </>
        )}
        <Select
          label="Interval"
          data={[{ value: 'auto', label: 'Automatic' }, ...INTERVALS.map((i) => ({ value: i, label: i[0]!.toUpperCase() + i.slice(1) }))]}
          value={view.interval ?? 'auto'}
          onChange={(v) => onChange({ interval: v === 'auto' ? undefined : (v ?? undefined) })}
          allowDeselect={false}
          w={140}
        />
        <Select
          label="Stack by"
          data={DIMENSIONS.map((d) => ({ value: d, label: DIMENSION_LABELS[d] }))}
          value={view.groupBy}
          onChange={(v) => onChange({ groupBy: v ?? undefined })}
          allowDeselect={false}
          w={140}
        />
        <Select
          label="Measure"
          data={(Object.keys(MEASURES) as Measure[]).map((m) => ({ value: m, label: MEASURES[m].label }))}
          value={view.measure}
          onChange={(v) => onChange({ measure: v ?? undefined })}
          allowDeselect={false}
          w={180}
        />
      </Group>
      <Group align="flex-end" gap="sm" wrap="wrap">
        {DIMENSIONS.map((d) => (
          <ValueFilter key={d} dimension={d} view={view} now={now} onChange={(v) => onChange({ [d]: v })} />
        ))}
        {mayAllOwners && <Switch label="Every owner I may see" checked={view.allOwners} onChange={(e) => onChange({ allOwners: e.currentTarget.checked ? 'true' : undefined })} mb={8} />}
        <Button variant="subtle" onClick={() => onChange(Object.fromEntries(DIMENSIONS.map((d) => [d, undefined])))}>
          Clear filters
        </Button>
      </Group>
    </Stack>
  );
}
