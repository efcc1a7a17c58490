/**
 * A user's program written against the generated client (`@dirigo/client`): it submits a job with its
 * input files as multipart/form-data, typed from end to end with no cast. The body is the document's
 * multipart schema of POST /jobs (JobSubmissionForm: manifest parts and File parts); the answer is typed
 * too. test/client/typed-submission.test.ts type-checks it with tsc and runs it against a real server.
 * Environment: DIRIGO_URL, DIRIGO_TOKEN and DIRIGO_CA (a PEM file). Prints `{"jids":[...]}`.
 */
import { readFileSync } from 'node:fs';
import { createDirigoClient, submissionFormData, unwrap, type JobManifest, type JobSubmissionForm } from '@dirigo/client';

const { DIRIGO_URL: url, DIRIGO_TOKEN: token, DIRIGO_CA: ca } = process.env;
if (!url || !token || !ca) throw new Error('set DIRIGO_URL, DIRIGO_TOKEN and DIRIGO_CA');

const dirigo = createDirigoClient({ url, token, ca: readFileSync(ca) });
try {
  const manifest: JobManifest = {
    Executable: '/bin/sh',
    Arguments: 'shout.sh words.txt',
    InputSandbox: ['shout.sh', 'words.txt'],
    OutputSandbox: ['shouted.txt'],
  };
  const form: JobSubmissionForm = {
    manifest: [JSON.stringify(manifest)],
    files: [new File(['tr a-z A-Z < "$1" > shouted.txt\n'], 'shout.sh'), new File(['typed all the way\n'], 'words.txt')],
  };
  // openapi-fetch sends JSON unless told otherwise: the typed form becomes the multipart body.
  const submitted = unwrap(await dirigo.POST('/jobs', { body: form, bodySerializer: () => submissionFormData(form) }));
  const jids: number[] = submitted.jids;
  process.stdout.write(`${JSON.stringify({ jids })}\n`);
} finally {
  await dirigo.close();
}
