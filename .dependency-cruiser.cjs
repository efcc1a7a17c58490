/**
 * The import rules of the architecture (docs/architecture.md), checked by `npm run depcruise` in
 * `npm test`. A broken rule fails with its name and the comment below it.
 *
 * Layers, bottom to top: src/kernel; the domains (each reached by the others only through its
 * index.ts, and only downwards in MAY_IMPORT); src/app, the composition root, which nothing imports.
 * Beside them: src/client-cli, the client side of `dirigo` (commands that speak HTTPS to a service, the
 * worker-node agent), which only the client command table src/app/cli/client-commands.ts imports; and three leaves
 * that both sides may import and that import no domain: src/terminal (terminal and exit-code helpers),
 * src/protocol (what the API states beyond its schemas: job statuses, attribute names, JDL, sandbox file
 * names, catalogue paths) and src/payload (running a job's payload on a machine: the local executor,
 * its sandbox, archives, output tail and process statistics, shared by the service and the agent).
 */
const DOMAINS = ['pki', 'registry', 'cluster', 'auth', 'accounting', 'federation', 'jobs', 'catalogue', 'executors', 'agents', 'webapp', 'downloads', 'sites'];

/** What each domain may import besides itself and the kernel: the layer order, written once. */
const MAY_IMPORT = {
  pki: [],
  registry: [],
  cluster: [],
  auth: ['pki', 'registry', 'cluster'],
  accounting: ['registry', 'cluster', 'auth'],
  federation: ['registry', 'auth'],
  sites: ['registry', 'auth'],
  jobs: ['registry', 'cluster', 'auth', 'accounting', 'sites'],
  catalogue: ['registry', 'auth'],
  executors: ['jobs', 'sites'],
  agents: ['cluster', 'auth', 'jobs', 'sites', 'executors'],
  webapp: ['registry', 'auth'],
  downloads: [],
};

/**
 * What src/client-cli may import besides itself, packages/client (@dirigo/client) and npm/node packages:
 * the leaves and src/pki (certificates and proxies), never another domain.
 */
const CLIENT_MAY_IMPORT = ['^src/client-cli/', '^src/terminal/', '^src/protocol/', '^src/payload/', '^src/pki/index\\.ts$', '^src/kernel/(config|errors|version)\\.ts$'];

const layerRules = Object.entries(MAY_IMPORT).map(([domain, allowed]) => {
  const forbidden = DOMAINS.filter((d) => d !== domain && !allowed.includes(d));
  return {
    name: `layer-${domain}`,
    comment: `src/${domain} may import only src/kernel${allowed.length ? ` and ${allowed.map((d) => `src/${d}`).join(', ')}` : ''} (MAY_IMPORT in .dependency-cruiser.cjs).`,
    severity: 'error',
    from: { path: `^src/${domain}/` },
    to: { path: `^src/(${forbidden.join('|')})/` },
  };
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import circles are not allowed: move the shared part to the module both sides need.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'kernel-imports-no-domain',
      comment: 'src/kernel is the bottom layer: it may import only itself and packages.',
      severity: 'error',
      from: { path: '^src/kernel/' },
      to: { path: '^src/', pathNot: '^src/kernel/' },
    },
    {
      name: 'nothing-imports-the-composition-root',
      comment: 'src/app assembles the service; only the entry point (bin/), tests and benchmarks may import it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/app/' },
      to: { path: '^src/app/' },
    },
    {
      name: 'domain-through-its-index',
      comment: "Another domain is reached only through its index.ts: import '../<domain>/index.ts'.",
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: `^src/(${DOMAINS.join('|')})/`, pathNot: ['^src/$1/', `^src/(${DOMAINS.join('|')})/index\\.ts$`] },
    },
    ...layerRules,
    {
      name: 'client-cli-imports-only-its-allowed-targets',
      comment: 'src/client-cli may import only itself, src/terminal, src/protocol, src/payload, src/pki/index.ts and src/kernel/{config,errors}.ts (besides packages/client and npm packages): no server domain.',
      severity: 'error',
      from: { path: '^src/client-cli/' },
      to: { path: '^src/', pathNot: CLIENT_MAY_IMPORT },
    },
    {
      name: 'only-the-dispatcher-imports-the-client',
      comment: 'The server never imports src/client-cli: only the client command table (src/app/cli/client-commands.ts) dispatches to it.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/client-cli/', '^src/app/cli/client-commands\\.ts$'] },
      to: { path: '^src/client-cli/' },
    },
    {
      name: 'terminal-is-a-leaf',
      comment: 'src/terminal (terminal, output and exit-code helpers shared by client and server commands) may import only itself and src/kernel/config.ts.',
      severity: 'error',
      from: { path: '^src/terminal/' },
      to: { path: '^src/', pathNot: ['^src/terminal/', '^src/kernel/config\\.ts$'] },
    },
    {
      name: 'protocol-is-a-leaf',
      comment: 'src/protocol (what client and server agree on beyond the schemas) may import only itself and src/kernel/errors.ts: no server domain.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: { path: '^src/', pathNot: ['^src/protocol/', '^src/kernel/errors\\.ts$'] },
    },
    {
      name: 'payload-is-a-leaf',
      comment: 'src/payload (running a payload, shared by the service and the worker-node agent) may import only itself, src/protocol and src/kernel/{config,errors}.ts: no server domain.',
      severity: 'error',
      from: { path: '^src/payload/' },
      to: { path: '^src/', pathNot: ['^src/payload/', '^src/protocol/', '^src/kernel/(config|errors)\\.ts$'] },
    },
    {
      name: 'no-test-code-in-the-product',
      comment: 'The service and its packages never import tests or benchmarks.',
      severity: 'error',
      from: { path: '^(src|packages/[^/]+/src)/' },
      to: { path: '^(test|bench|packages/[^/]+/test)/' },
    },
    {
      name: 'benches-use-shared-support',
      comment: 'Benchmarks share support with the tests through test/helpers only, never a test file.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/', pathNot: '^test/helpers/' },
    },
    {
      name: 'web-stands-alone',
      comment: 'The browser application (web/) is built on its own: it may use packages/client, never the service.',
      severity: 'error',
      from: { path: '^web/' },
      to: { path: '^(src|bin|test|bench)/' },
    },
    {
      name: 'packages-stand-alone',
      comment: 'A package under packages/ is published on its own: it may not import the service.',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^(src|bin)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
    reporterOptions: {
      mermaid: { minify: false },
    },
  },
};
