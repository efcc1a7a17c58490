/**
 * The jobs of one page as a table whose rows are rendered only where they are visible (1,000 rows
 * scroll as smoothly as 10). Header buttons sort; checkboxes select; a job's id opens its panel.
 */
import { memo, useRef } from 'react';
import { Anchor, Badge, Checkbox, ScrollArea, Table, UnstyledButton, VisuallyHidden } from '@mantine/core';
import { useVirtualizer } from '@tanstack/react-virtual';
import { formatValue, statusColor, TIME_ATTRIBUTES, type Attribute, type JobRecord } from './attributes.ts';

const ROW_HEIGHT = 36;

/**
 * Column widths for a fixed table layout: the table fits its area exactly, a long text ends in an
 * ellipsis (its whole text on hover) instead of pushing the last columns out, and widths do not jump as
 * rows scroll into view. Columns not listed share what is left.
 */
function columnWidth(c: Attribute): number | undefined {
  if (c === 'JobID') return 80;
  if (c === 'Status') return 125;
  if (c === 'ApplicationStatus') return 115;
  if (c === 'Site' || c === 'Owner') return 85;
  if (TIME_ATTRIBUTES.includes(c)) return 172;
  // Numbers under a header that breaks at its words (Number/Of/Processors).
  if (c === 'NumberOfProcessors' || c === 'NumberOfGPUs' || c === 'MaxRAM' || c === 'CPUTime' || c === 'TaskQueueID') return 100;
  return undefined;
}

/** `ApplicationStatus` may break as `Application`/`Status` in a narrow column: a header is never cut. */
function headerText(c: Attribute) {
  const words = c.split(/(?<=[a-z])(?=[A-Z])/);
  return words.map((w, i) => (
    <span key={w}>
      {i > 0 && <wbr />}
      {w}
    </span>
  ));
}

/** One line, cut with an ellipsis. */
const CLIPPED = { whiteSpace: 'nowrap', overflow: 'hidden', textOverflow: 'ellipsis' } as const;

export interface JobTableProps {
  jobs: JobRecord[];
  columns: Attribute[];
  sort: { attribute: Attribute; descending: boolean };
  onSort(attribute: Attribute): void;
  selected: ReadonlySet<number>;
  onSelect(jids: number[], on: boolean): void;
  onOpen(jid: number): void;
}

interface JobRowProps {
  job: JobRecord;
  index: number;
  columns: Attribute[];
  selected: boolean;
  onSelect(jids: number[], on: boolean): void;
  onOpen(jid: number): void;
}

/**
 * One row, rendered again only when its job or selection changes: while scrolling, rows that stay in
 * view cost nothing. A native checkbox keeps each row light.
 */
const JobRow = memo(function JobRow({ job, index, columns, selected, onSelect, onOpen }: JobRowProps) {
  const jid = job.JobID ?? 0;
  return (
    <Table.Tr h={ROW_HEIGHT} aria-rowindex={index + 2} data-jid={jid} data-status={job.Status ?? ''}>
      <Table.Td>
        <input type="checkbox" className="job-select" aria-label={`Select job ${jid}`} checked={selected} onChange={(e) => onSelect([jid], e.currentTarget.checked)} />
      </Table.Td>
      {columns.map((c) => (
        <Table.Td key={c} style={CLIPPED} title={c === 'JobID' || c === 'Status' ? undefined : formatValue(c, job[c]) || undefined}>
          {c === 'JobID' ? (
            <Anchor component="button" type="button" onClick={() => onOpen(jid)} aria-label={`Open job ${jid}`}>
              {jid}
            </Anchor>
          ) : c === 'Status' ? (
            <Badge color={statusColor(job.Status)} variant="dot" radius="sm">
              {job.Status}
            </Badge>
          ) : (
            formatValue(c, job[c])
          )}
        </Table.Td>
      ))}
    </Table.Tr>
  );
});

export function JobTable({ jobs, columns, sort, onSort, selected, onSelect, onOpen }: JobTableProps) {
  const viewport = useRef<HTMLDivElement>(null);
  const rows = useVirtualizer({ count: jobs.length, getScrollElement: () => viewport.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });
  const items = rows.getVirtualItems();
  const top = items[0]?.start ?? 0;
  const bottom = rows.getTotalSize() - (items.at(-1)?.end ?? 0);
  const ids = jobs.map((j) => j.JobID ?? 0);
  const allSelected = ids.length > 0 && ids.every((id) => selected.has(id));

  return (
    // Sized to its rows up to the window's height; the scrollbars take their own room instead of covering a row.
    <ScrollArea.Autosize mah="calc(100vh - 300px)" viewportRef={viewport} type="auto" offsetScrollbars="present" data-testid="job-table">
      <Table striped highlightOnHover stickyHeader aria-rowcount={jobs.length + 1} style={{ minWidth: 900, tableLayout: 'fixed' }}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th w={40}>
              <Checkbox
                aria-label="Select every job of this page"
                checked={allSelected}
                indeterminate={!allSelected && ids.some((id) => selected.has(id))}
                onChange={(e) => onSelect(ids, e.currentTarget.checked)}
              />
            </Table.Th>
            {columns.map((c) => (
              <Table.Th key={c} w={columnWidth(c)} style={{ verticalAlign: 'bottom' }} aria-sort={sort.attribute === c ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
                <UnstyledButton onClick={() => onSort(c)} fw={600} fz="sm">
                  {headerText(c)}
                  {sort.attribute === c ? (sort.descending ? ' ▼' : ' ▲') : ''}
                  <VisuallyHidden>, sort</VisuallyHidden>
                </UnstyledButton>
              </Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {top > 0 && (
            <tr aria-hidden>
              <td style={{ height: top, padding: 0 }} colSpan={columns.length + 1} />
            </tr>
          )}
          {items.map((item) => {
            const job = jobs[item.index]!;
            const jid = job.JobID ?? 0;
            return <JobRow key={jid} job={job} index={item.index} columns={columns} selected={selected.has(jid)} onSelect={onSelect} onOpen={onOpen} />;
          })}
          {bottom > 0 && (
            <tr aria-hidden>
              <td style={{ height: bottom, padding: 0 }} colSpan={columns.length + 1} />
            </tr>
          )}
        </Table.Tbody>
      </Table>
    </ScrollArea.Autosize>
  );
}
