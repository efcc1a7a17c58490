/**
 * A finished job's output, shown where a running job's peek would be: the files of its output sandbox,
 * read in the browser, and the end of the chosen one (the standard output first). A large sandbox is
 * only offered as a download, so that opening a tab never fetches gigabytes.
 */
import { useEffect, useState } from 'react';
import { Anchor, Code, Group, ScrollArea, Stack, Text } from '@mantine/core';
import { sandboxResponse } from './sandbox-transfer.ts';
import { readSandbox, type SandboxFile } from './sandbox-reader.ts';

const MOST_FETCHED = 8 * 1024 * 1024;
const MOST_SHOWN = 64 * 1024;

function ending(file: SandboxFile): string {
  const text = new TextDecoder().decode(file.data.subarray(Math.max(0, file.size - MOST_SHOWN)));
  return file.size > MOST_SHOWN ? `… (the last ${MOST_SHOWN / 1024} KiB of ${file.size.toLocaleString('en')} bytes)\n${text}` : text;
}

export function OutputSandbox({ jid }: { jid: number }) {
  const [files, setFiles] = useState<SandboxFile[]>();
  const [note, setNote] = useState<string>();
  const [chosen, setChosen] = useState<string>();
  useEffect(() => {
    let current = true;
    const read = async () => {
      const res = await sandboxResponse(jid, 'outputsandbox');
      if (!res.ok) {
        const e = (await res.json().catch(() => ({}))) as { error_description?: string };
        throw new Error(e.error_description ?? `the server answered ${res.status}`);
      }
      const length = Number(res.headers.get('content-length') ?? 0);
      if (length > MOST_FETCHED) {
        void res.body?.cancel();
        throw new Error(`The output sandbox is ${length.toLocaleString('en')} bytes: download it to read it.`);
      }
      const found = await readSandbox(res);
      if (!current) return;
      setFiles(found);
      setChosen((found.find((f) => /(^|\/)std\.out$/.test(f.name)) ?? found[0])?.name);
    };
    read().catch((e: Error) => current && setNote(e.message));
    return () => {
      current = false;
    };
  }, [jid]);

  if (note) return <Text size="sm">{note}</Text>;
  if (!files) return <Text size="sm">Reading the output sandbox…</Text>;
  if (files.length === 0) return <Text size="sm">The output sandbox holds no file.</Text>;
  const file = files.find((f) => f.name === chosen) ?? files[0]!;
  return (
    <Stack gap="xs" data-testid="output-sandbox">
      <Group gap="sm" role="group" aria-label="Files of the output sandbox">
        {files.map((f) => (
          <Anchor key={f.name} component="button" type="button" size="sm" fw={f === file ? 700 : undefined} aria-current={f === file ? 'true' : undefined} onClick={() => setChosen(f.name)}>
            {f.name} ({f.size.toLocaleString('en')} B)
          </Anchor>
        ))}
      </Group>
      <ScrollArea.Autosize mah={400}>
        <Code block data-testid="sandbox-file">
          {ending(file)}
        </Code>
      </ScrollArea.Autosize>
    </Stack>
  );
}
