/**
 * Submission: a few fields that make a JSON manifest, or a manifest written as JSON or JDL, with files
 * for the input sandbox (uploaded by the direct path, sandbox-transfer.ts). The server's refusal is shown beside the field it names.
 */
import { useState } from 'react';
import { Alert, Anchor, Button, FileInput, Group, SegmentedControl, Stack, Textarea, TextInput, Title } from '@mantine/core';
import { ApiError, authorizedFetch } from '../api.ts';
import { navigate } from '../url-state.ts';
import { jdlWithRef, uploadSandbox } from './sandbox-transfer.ts';

type Mode = 'form' | 'json' | 'jdl';
const FIELDS = ['Executable', 'Arguments', 'JobName', 'OutputSandbox'] as const;
type Field = (typeof FIELDS)[number];

const JDL_EXAMPLE = `[
  Executable = "echo";
  Arguments = "Hello from %n";
  JobName = "hello_%n";
  Parameters = 3;
]`;

/**
 * The manifest part naming an uploaded sandbox: JDL with the InputSandboxRef attribute, JSON manifests
 * with InputSandboxRef and the files it holds; undefined when the JSON does not parse (the multipart
 * submission then lets the service say what is wrong with it).
 */
async function withRef(part: { name: 'manifest' | 'jdl'; blob: Blob }, ref: string, files: readonly File[]): Promise<{ name: 'manifest' | 'jdl'; blob: Blob } | undefined> {
  const text = await part.blob.text();
  if (part.name === 'jdl') return { name: 'jdl', blob: new Blob([jdlWithRef(text, ref)], { type: 'text/x-jdl' }) };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const add = (m: unknown) => (m && typeof m === 'object' ? { ...m, InputSandbox: files.map((f) => f.name), InputSandboxRef: ref } : m);
  const manifests = Array.isArray(parsed) ? parsed.map(add) : add(parsed);
  return { name: 'manifest', blob: new Blob([JSON.stringify(manifests)], { type: 'application/json' }) };
}

/** Which form field a server message is about: messages name the manifest key they refuse. */
function fieldOf(message: string): Field | undefined {
  return FIELDS.find((f) => new RegExp(`\\b${f}\\b`).test(message));
}

export function SubmitPage() {
  const [mode, setMode] = useState<Mode>('form');
  const [fields, setFields] = useState<Record<Field, string>>({ Executable: '', Arguments: '', JobName: '', OutputSandbox: '' });
  const [text, setText] = useState('{\n  "Executable": "echo",\n  "Arguments": "hello"\n}');
  const [jdl, setJdl] = useState(JDL_EXAMPLE);
  const [files, setFiles] = useState<File[]>([]);
  const [error, setError] = useState<{ message: string; field?: Field | 'manifest' }>();
  const [submitted, setSubmitted] = useState<number[]>();
  const [busy, setBusy] = useState(false);

  const manifestPart = (): { name: 'manifest' | 'jdl'; blob: Blob } => {
    if (mode === 'jdl') return { name: 'jdl', blob: new Blob([jdl], { type: 'text/x-jdl' }) };
    if (mode === 'json') return { name: 'manifest', blob: new Blob([text], { type: 'application/json' }) };
    const manifest: Record<string, unknown> = { Executable: fields.Executable };
    if (fields.Arguments) manifest.Arguments = fields.Arguments;
    if (fields.JobName) manifest.JobName = fields.JobName;
    if (fields.OutputSandbox) manifest.OutputSandbox = fields.OutputSandbox.split(',').map((s) => s.trim()).filter(Boolean);
    if (files.length) manifest.InputSandbox = files.map((f) => f.name);
    return { name: 'manifest', blob: new Blob([JSON.stringify(manifest)], { type: 'application/json' }) };
  };

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const part = manifestPart();
      // Files go to the sandbox store by the direct path; an older service takes them in the multipart body.
      const ref = files.length ? await uploadSandbox(files) : undefined;
      const direct = ref ? await withRef(part, ref, files) : files.length ? undefined : part;
      let request: Request;
      if (direct) {
        request = new Request('/jobs', { method: 'POST', body: direct.blob, headers: { accept: 'application/json', 'content-type': direct.name === 'jdl' ? 'text/x-jdl' : 'application/json' } });
      } else {
        const form = new FormData();
        form.append(part.name, part.blob, part.name === 'jdl' ? 'job.jdl' : 'manifest.json');
        for (const f of files) form.append('files', f, f.name);
        request = new Request('/jobs', { method: 'POST', body: form, headers: { accept: 'application/json' } });
      }
      const res = await authorizedFetch(request);
      const body = (await res.json()) as { jids?: number[]; error?: string; error_description?: string };
      if (!res.ok || !body.jids) throw new ApiError(res.status, body.error ?? 'error', body.error_description ?? `the server answered ${res.status}`);
      setSubmitted(body.jids);
    } catch (e) {
      const message = (e as Error).message;
      setError({ message, field: mode === 'form' ? fieldOf(message) : 'manifest' });
    } finally {
      setBusy(false);
    }
  };

  const fieldError = (f: Field) => (error?.field === f ? error.message : undefined);
  return (
    <Stack gap="md" maw={760}>
      <Title order={1} size="h2">
        Submit jobs
      </Title>
      <SegmentedControl
        aria-label="How to describe the job"
        value={mode}
        onChange={(v) => setMode(v as Mode)}
        data={[
          { value: 'form', label: 'Form' },
          { value: 'json', label: 'Manifest (JSON)' },
          { value: 'jdl', label: 'JDL' },
        ]}
      />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack gap="sm">
          {mode === 'form' &&
            FIELDS.map((f) => (
              <TextInput
                key={f}
                label={f}
                required={f === 'Executable'}
                description={f === 'OutputSandbox' ? 'file names or patterns, separated by commas' : f === 'Executable' ? 'a program on PATH, an absolute path, or a file you upload' : undefined}
                value={fields[f]}
                onChange={(e) => setFields({ ...fields, [f]: e.currentTarget.value })}
                error={fieldError(f)}
              />
            ))}
          {mode === 'json' && (
            <Textarea label="Manifest (JSON)" autosize minRows={8} value={text} onChange={(e) => setText(e.currentTarget.value)} error={error?.field === 'manifest' ? error.message : undefined} ff="monospace" />
          )}
          {mode === 'jdl' && (
            <Textarea label="JDL" autosize minRows={8} value={jdl} onChange={(e) => setJdl(e.currentTarget.value)} error={error?.field === 'manifest' ? error.message : undefined} ff="monospace" />
          )}
          <FileInput label="Input sandbox files" multiple clearable value={files} onChange={setFiles} placeholder="choose files" />
          {error && !error.field && (
            <Alert color="red" role="alert">
              {error.message}
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={busy}>
              Submit
            </Button>
          </Group>
        </Stack>
      </form>
      {submitted && (
        <Alert color="green" role="status" title="Submitted">
          {submitted.length === 1 ? 'Job ' : 'Jobs '}
          {submitted.map((jid, i) => (
            <span key={jid}>
              {i > 0 && ', '}
              <Anchor component="button" type="button" onClick={() => navigate('', { job: String(jid) })}>
                {jid}
              </Anchor>
            </span>
          ))}
        </Alert>
      )}
    </Stack>
  );
}
