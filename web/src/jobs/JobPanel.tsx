/**
 * One job: attributes, status history as a timeline, parameters reported by the job, its manifest as
 * JSON or JDL, sandbox downloads, the end of a running job's output, why it waits, its workflow, hold
 * reason, retries, parents and dependents, and actions (hold and release where they apply).
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Code, Drawer, Group, ScrollArea, SegmentedControl, Stack, Tabs, Text, Timeline, Tooltip } from '@mantine/core';
import { FieldTable } from '../FieldTable.tsx';
import { api, authorizedFetch, saveResponse, unwrap } from '../api.ts';
import { ATTRIBUTES, formatValue, isFinal, statusColor, type JobDetail } from './attributes.ts';
import { actOnJobs, mayHold, mayRelease, type JobAction } from './actions.ts';
import { JobFlow } from './JobFlow.tsx';
import { ConfirmJobs } from './ConfirmJobs.tsx';
import { OutputSandbox } from './OutputSandbox.tsx';
import { sandboxDownloadUrl } from './sandbox-transfer.ts';
import { Matching } from './Matching.tsx';
import { formatTimestamp } from '../time-format.ts';

function Manifest({ jid }: { jid: number }) {
  const [format, setFormat] = useState<'json' | 'jdl'>('json');
  const [text, setText] = useState<string>();
  useEffect(() => {
    const accept = format === 'jdl' ? 'text/x-jdl' : 'application/json';
    void authorizedFetch(new Request(`/jobs/${jid}/manifest`, { headers: { accept } }))
      .then(async (res) => {
        const body = await res.text();
        setText(res.ok && format === 'json' ? JSON.stringify(JSON.parse(body), null, 2) : body);
      })
      .catch((e: Error) => setText(e.message));
  }, [jid, format]);
  return (
    <Stack gap="xs">
      <SegmentedControl
        aria-label="Manifest format"
        value={format}
        onChange={(v) => setFormat(v as 'json' | 'jdl')}
        data={[
          { value: 'json', label: 'JSON' },
          { value: 'jdl', label: 'JDL' },
        ]}
        w={180}
      />
      <Code block data-testid="manifest">
        {text ?? 'Loading…'}
      </Code>
    </Stack>
  );
}

/**
 * Peek reads a running job's output where it is being written; a finished job's output is in its output
 * sandbox (shown as OutputSandbox reads it), and a job that has not started has none. Those are said
 * plainly instead of peek's refusal.
 */
function Output({ jid, status }: { jid: number; status: string }) {
  if (isFinal(status)) {
    const sandbox = status === 'Done' || status === 'Failed';
    return (
      <Stack gap="sm">
        <Alert color="blue" role="status" title={`Job ${jid} has finished (${status})`} data-testid="finished-output">
          <Text size="sm">
            {sandbox
              ? 'Nothing is running any more, so there is no output to follow: what the job wrote is in its output sandbox, shown below.'
              : 'Nothing is running any more, so there is no output to follow.'}
          </Text>
        </Alert>
        {sandbox && <OutputSandbox jid={jid} />}
      </Stack>
    );
  }
  if (!['Running', 'Completing', 'Stalled'].includes(status)) {
    return <Text size="sm">Job {jid} is {status}: it has not started, so it has written nothing yet.</Text>;
  }
  return <Peek jid={jid} running={status !== 'Stalled'} />;
}

function Peek({ jid, running }: { jid: number; running: boolean }) {
  const [text, setText] = useState<string>();
  const read = useCallback(async () => {
    const res = await authorizedFetch(new Request(`/jobs/${jid}/peek`, { headers: { accept: 'text/plain' } }));
    const body = await res.text();
    setText(res.ok ? body : ((JSON.parse(body) as { error_description?: string }).error_description ?? body));
  }, [jid]);
  useEffect(() => void read().catch((e: Error) => setText(e.message)), [read]);
  return (
    <Stack gap="xs">
      <Group>
        <Button size="xs" variant="default" onClick={() => void read()}>
          Read again
        </Button>
        {!running && <Text size="sm">The job is stalled: this is what it last wrote, if anything.</Text>}
      </Group>
      <ScrollArea.Autosize mah={400}>
        <Code block data-testid="peek">
          {text ?? 'Loading…'}
        </Code>
      </ScrollArea.Autosize>
    </Stack>
  );
}

export function JobPanel({ jid, onClose, onChanged }: { jid: number; onClose(): void; onChanged(): void }) {
  const [job, setJob] = useState<JobDetail>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [confirming, setConfirming] = useState<'kill' | 'delete'>();
  const load = useCallback(async () => {
    try {
      setJob(unwrap(await api.GET('/jobs/{jid}', { params: { path: { jid } } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [jid]);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 5_000);
    return () => clearInterval(timer);
  }, [load]);

  const download = async (which: 'inputsandbox' | 'outputsandbox') => {
    try {
      const found = await sandboxDownloadUrl(jid, which);
      if (typeof found !== 'string') await saveResponse(found, `job-${jid}-${which}.tar.gz`);
      else {
        // The store's presigned URL (its Content-Disposition names the file): a navigation needs no CORS rule.
        const link = Object.assign(document.createElement('a'), { href: found, download: `job-${jid}-${which}.tar.gz` });
        document.body.append(link);
        link.click();
        link.remove();
      }
      setNotice(undefined);
    } catch (e) {
      setNotice((e as Error).message);
    }
  };
  const act = async (action: JobAction) => {
    const { refused } = await actOnJobs(action, [jid]);
    setNotice(refused.length ? refused[0]!.error_description : `${action}: done`);
    await load();
    onChanged();
  };
  const running = job?.Status === 'Running' || job?.Status === 'Completing';

  return (
    <Drawer opened onClose={onClose} position="right" size="xl" title={`Job ${jid}${job?.JobName ? ` · ${job.JobName}` : ''}`} closeButtonProps={{ 'aria-label': 'Close the job panel' }}>
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      {job && (
        <Stack gap="md" data-testid="job-panel">
          <Group gap="xs">
            <Badge color={statusColor(job.Status)} variant="dot" size="lg" data-testid="panel-status">
              {job.Status}
            </Badge>
            <Text size="sm">{job.MinorStatus}</Text>
            {job.ApplicationStatus && <Text size="sm">· {job.ApplicationStatus}</Text>}
          </Group>
          <Group gap="xs">
            <Button size="xs" onClick={() => void download('outputsandbox')} disabled={job.Status !== 'Done' && job.Status !== 'Failed'}>
              Download output sandbox
            </Button>
            <Button size="xs" variant="default" onClick={() => void download('inputsandbox')}>
              Download input sandbox
            </Button>
            {/* A disabled button gets no pointer events: the wrapper shows why. */}
            <Tooltip label={`Job ${jid} has finished (${job.Status}): there is nothing to kill.`} disabled={!isFinal(job.Status)}>
              <span data-testid="panel-kill">
                <Button size="xs" color="red" variant="light" disabled={isFinal(job.Status)} onClick={() => setConfirming('kill')}>
                  Kill
                </Button>
              </span>
            </Tooltip>
            <Button size="xs" variant="light" onClick={() => void act('reschedule')}>
              Reschedule
            </Button>
            {mayHold(job.Status, job.HoldReason) && (
              <Button size="xs" variant="light" onClick={() => void act('hold')}>
                Hold
              </Button>
            )}
            {mayRelease(job.Status, job.HoldReason) && (
              <Button size="xs" variant="light" onClick={() => void act('release')}>
                Release
              </Button>
            )}
            <Button size="xs" variant="light" color="gray" onClick={() => setConfirming('delete')}>
              Delete
            </Button>
          </Group>
          {notice && (
            <Alert color="blue" role="status" withCloseButton closeButtonLabel="Dismiss" onClose={() => setNotice(undefined)}>
              {notice}
            </Alert>
          )}
          <JobFlow job={job} />
          <Tabs defaultValue={running ? 'peek' : 'attributes'} keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="attributes">Attributes</Tabs.Tab>
              <Tabs.Tab value="history">History</Tabs.Tab>
              <Tabs.Tab value="parameters">Parameters</Tabs.Tab>
              <Tabs.Tab value="manifest">Manifest</Tabs.Tab>
              <Tabs.Tab value="peek">Output</Tabs.Tab>
              <Tabs.Tab value="matching">Why waiting</Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="attributes" pt="sm">
              <FieldTable rows={ATTRIBUTES.map((a) => [a, formatValue(a, job[a])])} />
            </Tabs.Panel>
            <Tabs.Panel value="history" pt="sm">
              <Timeline active={job.StatusHistory.length - 1} bulletSize={14} lineWidth={2}>
                {job.StatusHistory.map((h, i) => (
                  <Timeline.Item key={i} title={`${h.Status} · ${h.MinorStatus}`}>
                    <Text size="sm">{h.ApplicationStatus}</Text>
                    <Text size="xs">
                      {formatTimestamp(h.StatusTime)} · {h.Source}
                    </Text>
                  </Timeline.Item>
                ))}
              </Timeline>
            </Tabs.Panel>
            <Tabs.Panel value="parameters" pt="sm">
              {Object.keys(job.Parameters).length === 0 ? (
                <Text size="sm">The job has reported no parameters.</Text>
              ) : (
                <FieldTable rows={Object.entries(job.Parameters)} />
              )}
            </Tabs.Panel>
            <Tabs.Panel value="manifest" pt="sm">
              <Manifest jid={jid} />
            </Tabs.Panel>
            <Tabs.Panel value="peek" pt="sm">
              <Output jid={jid} status={job.Status ?? ''} />
            </Tabs.Panel>
            <Tabs.Panel value="matching" pt="sm">
              <Matching jid={jid} />
            </Tabs.Panel>
          </Tabs>
          {confirming && (
            <ConfirmJobs
              action={confirming}
              jobs={[{ jid, name: job.JobName, status: job.Status }]}
              onCancel={() => setConfirming(undefined)}
              onConfirm={() => {
                setConfirming(undefined);
                void act(confirming);
              }}
            />
          )}
        </Stack>
      )}
    </Drawer>
  );
}
