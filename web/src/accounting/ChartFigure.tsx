/**
 * One plot of the Accounting page: a titled figure with a sentence that says what the plot shows (read by
 * screen readers in place of the drawing), the plot, and the same numbers as a table to open below it.
 * Loading, an empty answer and a refusal are written out instead of the plot.
 */
import { useId, useState, type ReactNode } from 'react';
import { Alert, Loader, Group, Paper, Stack, Table, Text, Title } from '@mantine/core';
import type { Answer } from './use-answer.ts';
import { formatNumber, type Pivot } from './series.ts';

export interface ChartFigureProps<T> {
  title: string;
  testId: string;
  answer: Answer<T> | undefined;
  /** True when the answer has nothing to draw. */
  isEmpty(data: T): boolean;
  emptyText: string;
  /** The sentence that sums the plot up. */
  describe(data: T): string;
  chart(data: T): ReactNode;
  table(data: T): ReactNode;
}

export function ChartFigure<T>({ title, testId, answer, isEmpty, emptyText, describe, chart, table }: ChartFigureProps<T>) {
  const titleId = useId();
  const descriptionId = useId();
  const state = answer?.state ?? 'loading';
  // Built when opened (a day of minutes is 1,440 rows), and kept open while the view changes.
  const [tableOpen, setTableOpen] = useState(false);
  return (
    <Paper withBorder p="md" component="figure" m={0} aria-labelledby={titleId} aria-describedby={descriptionId} data-testid={testId} data-state={answer?.state === 'done' && isEmpty(answer.data) ? 'empty' : state}>
      <Stack gap="sm">
        <Title order={2} size="h4" id={titleId}>
          {title}
        </Title>
        {answer?.state === 'error' ? (
          <Alert color="red" role="alert" title={`${title} could not be read`} id={descriptionId}>
            {answer.message}
          </Alert>
        ) : answer?.state !== 'done' ? (
          <Group gap="xs" id={descriptionId} role="status">
            <Loader size="sm" aria-hidden />
            <Text size="sm">Loading…</Text>
          </Group>
        ) : isEmpty(answer.data) ? (
          <Text size="sm" id={descriptionId}>
            {emptyText}
          </Text>
        ) : (
          <>
            <Text size="sm" id={descriptionId}>
              {describe(answer.data)}
            </Text>
            {/* The drawing repeats the sentence above and the table below: screen readers skip it. */}
            <div aria-hidden>{chart(answer.data)}</div>
            <details open={tableOpen} onToggle={(e) => setTableOpen(e.currentTarget.open)}>
              <summary>
                <Text span size="sm">
                  Table of the numbers
                </Text>
              </summary>
              {tableOpen && table(answer.data)}
            </details>
          </>
        )}
      </Stack>
    </Paper>
  );
}

/** The numbers of a pivot: a row per bucket, a column per series and the bucket's total. */
export function PivotTable({ pivot, caption, withTotal = true }: { pivot: Pivot; caption: string; withTotal?: boolean }) {
  return (
    <Table.ScrollContainer minWidth={300} mah={360}>
      <Table striped withTableBorder stickyHeader>
        <Table.Caption>{caption}</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Time</Table.Th>
            {pivot.series.map((s) => (
              <Table.Th scope="col" key={s.key}>
                {s.label}
              </Table.Th>
            ))}
            {withTotal && <Table.Th scope="col">All</Table.Th>}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {pivot.data.map((point) => (
            <Table.Tr key={String(point.time)}>
              <Table.Th scope="row" fw={400}>
                {point.time}
              </Table.Th>
              {pivot.series.map((s) => (
                <Table.Td key={s.key}>{formatNumber(Number(point[s.key] ?? 0))}</Table.Td>
              ))}
              {withTotal && <Table.Td>{formatNumber(pivot.series.reduce((n, s) => n + Number(point[s.key] ?? 0), 0))}</Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
