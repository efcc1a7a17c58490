/**
 * The user's own workflows (GET /workflows without `owner`, newest first; another owner's are read
 * with `owner`, which this page does not offer), each with its Status and its jobs' counts, read again every few seconds; a
 * workflow's id opens its graph.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Anchor, Badge, Progress, Stack, Table, Text, Title } from '@mantine/core';
import { statusColor } from '../jobs/attributes.ts';
import { formatTimestamp } from '../time-format.ts';
import { basePath, navigate } from '../url-state.ts';
import { countsText, listWorkflows, orderedCounts, workflowColor, type WorkflowSummary } from './model.ts';

const REFRESH_MS = 5_000;

export function WorkflowsPage() {
  const [workflows, setWorkflows] = useState<WorkflowSummary[]>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      setWorkflows(await listWorkflows());
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);

  return (
    <Stack gap="md">
      <Title order={1} size="h2">
        Workflows
      </Title>
      {error && (
        <Alert color="red" role="alert" title="The workflows could not be listed">
          {error}
        </Alert>
      )}
      {workflows && workflows.length === 0 && <Text size="sm">No workflow yet. Submit one with POST /workflows or `dirigo workflow submit`.</Text>}
      {workflows && workflows.length > 0 && (
        <Table.ScrollContainer minWidth={900}>
          <Table striped highlightOnHover data-testid="workflows">
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Workflow</Table.Th>
                <Table.Th scope="col">Name</Table.Th>
                <Table.Th scope="col">Kind</Table.Th>
                <Table.Th scope="col">Owner</Table.Th>
                <Table.Th scope="col">Status</Table.Th>
                <Table.Th scope="col">Jobs</Table.Th>
                <Table.Th scope="col" w={260}>
                  Statuses
                </Table.Th>
                <Table.Th scope="col">MaxRunning</Table.Th>
                <Table.Th scope="col">Submitted</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {workflows.map((w) => (
                <Table.Tr key={w.WorkflowID} data-workflow={w.WorkflowID} data-status={w.Status}>
                  <Table.Td>
                    <Anchor
                      href={`${basePath()}workflows/${w.WorkflowID}`}
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(`workflows/${w.WorkflowID}`);
                      }}
                      aria-label={`Open workflow ${w.WorkflowID}`}
                    >
                      {w.WorkflowID}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{w.Name}</Table.Td>
                  <Table.Td>{w.Kind}</Table.Td>
                  <Table.Td>{w.Owner}</Table.Td>
                  <Table.Td>
                    <Badge color={workflowColor(w.Status)} variant="dot">
                      {w.Status}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{w.Jobs}</Table.Td>
                  <Table.Td>
                    <Stack gap={2}>
                      <Progress.Root size={10} aria-hidden>
                        {orderedCounts(w.Counts).map((c) => (
                          <Progress.Section key={c.status} value={(100 * c.count) / Math.max(1, w.Jobs)} color={statusColor(c.status)} />
                        ))}
                      </Progress.Root>
                      <Text size="xs">{countsText(w.Counts)}</Text>
                    </Stack>
                  </Table.Td>
                  <Table.Td>{w.MaxRunning ?? '—'}</Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatTimestamp(w.SubmissionTime)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
