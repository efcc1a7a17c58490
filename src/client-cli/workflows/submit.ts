/**
 * `dirigo workflow submit`: a JSON file that is the body of POST /workflows, or JDL files, one node each
 * (a node's name is its NodeName, else its JobName), and the files of the input sandbox. With files,
 * they are packed and uploaded by the direct path (docs/sandboxes.md), as `dirigo jobs submit` does, and
 * the workflow is sent as JSON, each node naming the sandbox (InputSandboxRef; JDL nodes are read here
 * into their manifests). A service without POST /sandboxes (older) gets multipart (a `workflow` part,
 * one `manifest` or `jdl` part per node, then the files), as docs/workflows.md describes.
 */
import { CliError, EXIT } from '../../terminal/output.ts';
import { answer, api, type Connection } from '../shared/http.ts';
import { heldJdl, heldManifest, isJdlFile, jdlInputFiles, parseJsonManifest, parsedJdl, readManifestText, sandboxFiles, withFiles } from '../jobs/submission-files.ts';
import { uploadLocalFiles, withSandboxRef } from '../jobs/submit-cli.ts';
import type { Submitted } from './format.ts';

export interface SubmitOptions {
  name?: string | undefined;
  maxRunning?: number | undefined;
  hold: boolean;
}

/** What the service takes besides the nodes: Name and MaxRunning, the options overriding the file. */
type WorkflowPart = Record<string, unknown>;

/** The JSON file as its workflow part and its nodes; what is wrong inside a node is the service's to say. */
function readJsonWorkflow(file: string): { workflow: WorkflowPart; nodes: unknown[] } {
  const body = parseJsonManifest(file, readManifestText(file));
  if (body === null || typeof body !== 'object' || Array.isArray(body) || !Array.isArray((body as { Jobs?: unknown }).Jobs)) {
    throw new CliError(`${file} is not a workflow: an object with "Jobs": [job descriptions] (and "Name", "MaxRunning") is (docs/workflows.md)`, EXIT.usage);
  }
  const { Jobs, ...workflow } = body as { Jobs: unknown[] } & WorkflowPart;
  return { workflow, nodes: Jobs };
}

/**
 * What POST /workflows gets: the JSON body without files; with files, the JSON body whose nodes will name
 * the uploaded sandbox, the files' paths, and the multipart form for a service without the direct path.
 */
export type WorkflowRequest = { json: Record<string, unknown> } | { json: Record<string, unknown>; files: string[]; form: FormData };

/**
 * Reads the files and builds the request, before anything is sent: a file that cannot be read or is no
 * workflow is a usage error, not a request the service refuses.
 */
export async function workflowRequest(args: readonly string[], options: SubmitOptions): Promise<WorkflowRequest> {
  if (args.length === 0) throw new CliError('workflow submit needs a workflow file (FILE.json) or the JDL files of its nodes (FILE.jdl...)', EXIT.usage);
  // The JDL files given first are the nodes; the files after them join the input sandbox.
  let jdlCount = 0;
  while (jdlCount < args.length && isJdlFile(args[jdlCount]!)) jdlCount++;
  const overrides: WorkflowPart = { ...(options.name !== undefined ? { Name: options.name } : {}), ...(options.maxRunning !== undefined ? { MaxRunning: options.maxRunning } : {}) };
  const form = new FormData();
  if (jdlCount === 0) {
    const [file, ...given] = args;
    const { workflow, nodes } = readJsonWorkflow(file!);
    const jobs = options.hold ? nodes.map(heldManifest) : nodes;
    const head = { ...workflow, ...overrides };
    if (given.length === 0) return { json: { ...head, Jobs: jobs } };
    form.append('workflow', JSON.stringify(head));
    for (const job of jobs) form.append('manifest', JSON.stringify(job));
    for (const f of await sandboxFiles(given)) form.append('files', f);
    return { json: { ...head, Jobs: jobs }, files: given, form };
  }
  let files = args.slice(jdlCount);
  if (Object.keys(overrides).length > 0) form.append('workflow', JSON.stringify(overrides));
  const jobs: unknown[] = [];
  for (const file of args.slice(0, jdlCount)) {
    const text = readManifestText(file);
    files = withFiles(files, jdlInputFiles(file, text));
    form.append('jdl', options.hold ? heldJdl(file, text) : text);
    // The service reads a jdl part with the same parser: the node as JSON is the same manifest.
    const manifest = parsedJdl(file, text);
    jobs.push(options.hold ? heldManifest(manifest) : manifest);
  }
  if (files.length === 0) return { json: { ...overrides, Jobs: jobs } };
  for (const f of await sandboxFiles(files)) form.append('files', f);
  return { json: { ...overrides, Jobs: jobs }, files, form };
}

export async function submitWorkflow(conn: Connection, token: string, request: WorkflowRequest, json: boolean): Promise<Submitted> {
  const client = api(conn, token);
  if (!('files' in request)) return answer(conn, client.POST('/workflows', { body: request.json as never }));
  const sandbox = await uploadLocalFiles(conn, client, request.files, json);
  if (sandbox === undefined) return answer(conn, client.POST('/workflows', { body: {} as never, bodySerializer: () => request.form }));
  const jobs = (request.json.Jobs as unknown[]).map((m) => withSandboxRef(m, sandbox));
  return answer(conn, client.POST('/workflows', { body: { ...request.json, Jobs: jobs } as never }));
}
