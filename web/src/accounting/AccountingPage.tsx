/**
 * Accounting (docs/accounting.md): usage over time stacked by a dimension, the runs' final statuses, CPU
 * efficiency over time and, for JobAdministrator and JobMonitor, the queue's history. Every control is in
 * the address, so a link shows the same view. Loaded on its own (App.tsx), with the charts library, so
 * that the other pages do not carry it.
 */
import { useMemo, useState } from 'react';
import { AreaChart, DonutChart, LineChart } from '@mantine/charts';
import '@mantine/charts/styles.css';
import { Alert, Button, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useRights } from '../account/may-manage.ts';
import { updateParams } from '../url-state.ts';
import { AccountingFilters, type Changes } from './AccountingFilters.tsx';
import { ChartFigure, PivotTable } from './ChartFigure.tsx';
import { fetchQueue, fetchUsage, type QueueAnswer, type UsageAnswer } from './data.ts';
import { bucketsOf, colorOf, formatNumber, pivot, round, type Pivot } from './series.ts';
import { useAnswer } from './use-answer.ts';
import { DIMENSION_LABELS, MEASURES, readView, timeRange } from './view.ts';

const CHART_HEIGHT = 280;

/** Sums of each series over every bucket, largest first. */
function totals(p: Pivot): { label: string; value: number }[] {
  return p.series.map((s) => ({ label: s.label, value: p.data.reduce((n, d) => n + Number(d[s.key] ?? 0), 0) })).sort((a, b) => b.value - a.value);
}

function span(p: Pivot): string {
  const first = p.data[0]?.time;
  const last = p.data.at(-1)?.time;
  return first === last ? `in ${first}` : `from ${first} to ${last}`;
}

function StatusTable({ rows }: { rows: { label: string; value: number }[] }) {
  const all = rows.reduce((n, r) => n + r.value, 0);
  return (
    <Table striped withTableBorder>
      <Table.Caption>Runs per final status</Table.Caption>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Status</Table.Th>
          <Table.Th scope="col">Runs</Table.Th>
          <Table.Th scope="col">Share</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.map((r) => (
          <Table.Tr key={r.label} data-status={r.label}>
            <Table.Th scope="row" fw={400}>
              {r.label}
            </Table.Th>
            <Table.Td>{formatNumber(r.value)}</Table.Td>
            <Table.Td>{formatNumber((100 * r.value) / Math.max(1, all))} %</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function AccountingPage({ params }: { params: URLSearchParams }) {
  const view = useMemo(() => readView(params), [params]);
  // A quick range ends at the hour after this moment; Refresh moves it to now.
  const [now, setNow] = useState(() => Date.now());
  const { username, properties } = useRights();
  const mayQueue = properties.includes('JobAdministrator') || properties.includes('JobMonitor');
  const mayAllOwners = mayQueue || properties.includes('JobSharing');
  const measure = MEASURES[view.measure];
  // What the answers depend on (the measure only changes what is drawn from them).
  const viewKey = JSON.stringify([timeRange(view, now), view.interval, view.filters, view.allOwners]);
  const change = (changes: Changes, replace = false) => updateParams(changes, replace);

  const usage = useAnswer<UsageAnswer>(`usage|${view.groupBy}|${viewKey}`, (signal) => fetchUsage(view, { groupBy: view.groupBy, now }, signal));
  const statuses = useAnswer<UsageAnswer>(`status|${viewKey}`, (signal) => fetchUsage(view, { groupBy: 'Status', total: true, now }, signal));
  const overall = useAnswer<UsageAnswer>(`overall|${viewKey}`, (signal) => fetchUsage(view, { now }, signal));
  const queue = useAnswer<QueueAnswer>(`queue|${viewKey}|${mayQueue}`, mayQueue ? (signal) => fetchQueue(view, now, signal) : undefined);

  const usagePivot = useMemo(() => (usage?.state === 'done' ? pivot(usage.data.rows, (r) => r[measure.field], usage.data.interval, bucketsOf(usage.data.from, usage.data.to, usage.data.interval)) : undefined), [usage, measure]);
  const efficiency = useMemo(
    () => (overall?.state === 'done' ? pivot(overall.data.rows.filter((r) => r.CPUEfficiency !== null), (r) => 100 * (r.CPUEfficiency ?? 0), overall.data.interval) : undefined),
    [overall],
  );
  const queuePivot = useMemo(() => (queue?.state === 'done' ? pivot(queue.data.rows, (r) => r.Jobs, queue.data.interval, bucketsOf(queue.data.from, queue.data.to, queue.data.interval)) : undefined), [queue]);
  const range = timeRange(view, now);

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={1} size="h2">
          Accounting
        </Title>
        <Button size="xs" variant="default" onClick={() => setNow(Date.now())}>
          Refresh
        </Button>
      </Group>
      <Text size="sm">
        Runs that ended {range.from ? `from ${range.from.slice(0, 16).replace('T', ' ')}` : 'in the last 30 days'}
        {range.to ? ` to ${range.to.slice(0, 16).replace('T', ' ')}` : ''} UTC, {view.allOwners ? 'of every owner you may see' : 'your own'}.
      </Text>
      <AccountingFilters view={view} now={now} mayAllOwners={mayAllOwners} onChange={change} />

      <ChartFigure
        title={`${measure.label} by ${DIMENSION_LABELS[view.groupBy].toLowerCase()}`}
        testId="usage-chart"
        answer={usage}
        isEmpty={(d) => d.rows.length === 0}
        emptyText="No run ended in this range with these filters."
        describe={() => {
          const t = totals(usagePivot!);
          const all = t.reduce((n, x) => n + x.value, 0);
          return `${formatNumber(all)} ${measure.unit} ${span(usagePivot!)}, stacked by ${DIMENSION_LABELS[view.groupBy].toLowerCase()}: ${t
            .slice(0, 5)
            .map((x) => `${x.label} ${formatNumber(x.value)}`)
            .join(', ')}${t.length > 5 ? ` and ${t.length - 5} more` : ''}.`;
        }}
        chart={() => (
          <AreaChart
            h={CHART_HEIGHT}
            data={usagePivot!.data}
            dataKey="time"
            series={usagePivot!.series.map((s) => ({ name: s.key, label: s.label, color: s.color }))}
            type="stacked"
            curveType="linear"
            withLegend
            legendProps={{ verticalAlign: 'bottom' }}
            yAxisLabel={measure.label}
            valueFormatter={formatNumber}
            accessibilityLayer={false}
            withDots={usagePivot!.data.length < 3}
          />
        )}
        table={() => <PivotTable pivot={usagePivot!} caption={`${measure.label} per interval and ${DIMENSION_LABELS[view.groupBy].toLowerCase()}`} />}
      />

      <SimpleGrid cols={{ base: 1, lg: 2 }}>
        <ChartFigure
          title="Final statuses"
          testId="status-chart"
          answer={statuses}
          isEmpty={(d) => d.rows.length === 0}
          emptyText="No run ended in this range with these filters."
          describe={(d) => {
            const all = d.rows.reduce((n, r) => n + r.Jobs, 0);
            return `${formatNumber(all)} runs ended: ${d.rows.map((r) => `${r.Group ?? '(none)'} ${formatNumber(r.Jobs)} (${formatNumber((100 * r.Jobs) / Math.max(1, all))} %)`).join(', ')}.`;
          }}
          chart={(d) => (
            <Group justify="center">
              <DonutChart
                data={d.rows.map((r, i) => ({ name: r.Group ?? '(none)', value: r.Jobs, color: colorOf(r.Group ?? '', i) }))}
                size={200}
                thickness={30}
                withLabelsLine
                withLabels
                labelsType="name"
                chartLabel={`${formatNumber(d.rows.reduce((n, r) => n + r.Jobs, 0))} runs`}
                accessibilityLayer={false}
                // Out of the tab order: the drawing is hidden from assistive technology (the table says it).
                pieProps={{ rootTabIndex: -1 }}
              />
            </Group>
          )}
          table={(d) => <StatusTable rows={d.rows.map((r) => ({ label: r.Group ?? '(none)', value: r.Jobs }))} />}
        />
        <ChartFigure
          title="CPU efficiency"
          testId="efficiency-chart"
          answer={overall}
          isEmpty={() => efficiency!.data.length === 0}
          emptyText="No run in this range had its CPU time measured."
          describe={() => {
            const values = efficiency!.data.map((d) => Number(d.s0 ?? 0));
            return `CPU time over wall-clock time × processors, per interval ${span(efficiency!)}: from ${formatNumber(Math.min(...values))} % to ${formatNumber(Math.max(...values))} %.`;
          }}
          chart={() => (
            <LineChart
              h={CHART_HEIGHT}
              data={efficiency!.data}
              dataKey="time"
              series={[{ name: 's0', label: 'CPU efficiency', color: 'blue.6' }]}
              curveType="linear"
              unit=" %"
              yAxisProps={{ domain: [0, (max: number) => Math.max(100, Math.ceil(max))] }}
              valueFormatter={(v) => `${round(v)}`}
              accessibilityLayer={false}
            />
          )}
          table={() => <PivotTable pivot={{ ...efficiency!, series: [{ ...efficiency!.series[0]!, label: 'CPU efficiency (%)' }] }} caption="CPU efficiency per interval, in percent" withTotal={false} />}
        />
      </SimpleGrid>

      {username === undefined ? null : mayQueue ? (
        <ChartFigure
          title="Queue history"
          testId="queue-chart"
          answer={queue}
          isEmpty={(d) => d.rows.length === 0}
          emptyText="No queue sample in this range."
          describe={() => {
            const t = totals(queuePivot!);
            const peak = Math.max(...queuePivot!.data.map((d) => queuePivot!.series.reduce((n, s) => n + Number(d[s.key] ?? 0), 0)));
            return `Mean jobs per status in the queue ${span(queuePivot!)}, at most ${formatNumber(peak)} in one interval; statuses: ${t.map((x) => x.label).join(', ')}.`;
          }}
          chart={() => (
            <AreaChart
              h={CHART_HEIGHT}
              data={queuePivot!.data}
              dataKey="time"
              series={queuePivot!.series.map((s) => ({ name: s.key, label: s.label, color: s.color }))}
              type="stacked"
              curveType="linear"
              withLegend
              legendProps={{ verticalAlign: 'bottom' }}
              yAxisLabel="Jobs"
              valueFormatter={formatNumber}
              accessibilityLayer={false}
              withDots={queuePivot!.data.length < 3}
            />
          )}
          table={() => <PivotTable pivot={queuePivot!} caption="Mean jobs per interval and status" />}
        />
      ) : (
        <Alert color="gray" title="Queue history" data-testid="queue-note">
          The queue's history is shown to groups with JobAdministrator or JobMonitor.
        </Alert>
      )}
    </Stack>
  );
}
