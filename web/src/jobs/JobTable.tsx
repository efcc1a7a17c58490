/**
 * The jobs of one page as a table whose rows are rendered only where they are visible (1,000 rows
 * scroll as smoothly as 10). Header buttons sort; checkboxes select; a job's id opens its panel.
 */
import { memo, useRef } from 'react';
import { Anchor, Badge, Checkbox, ScrollArea, Table, UnstyledButton, VisuallyHidden } from '@mantine/core';
import { useVirtualizer } from '@tanstack/react-virtual';
import { formatValue, statusColor, type Attribute, type JobRecord } from './attributes.ts';

const ROW_HEIGHT = 36;

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
        // A badge's label may shrink to an ellipsis: the status cell keeps room for the longest status.
        <Table.Td key={c} style={{ whiteSpace: 'nowrap', minWidth: c === 'Status' ? 130 : undefined }}>
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
    <ScrollArea.Autosize mah="calc(100vh - 300px)" mih={240} viewportRef={viewport} type="auto" data-testid="job-table">
      <Table striped highlightOnHover stickyHeader aria-rowcount={jobs.length + 1} style={{ minWidth: 900 }}>
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
              <Table.Th key={c} aria-sort={sort.attribute === c ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
                <UnstyledButton onClick={() => onSort(c)} fw={600} fz="sm" style={{ whiteSpace: 'nowrap' }}>
                  {c}
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
