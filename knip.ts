/**
 * Unused files, exports and dependencies, checked by `npm run knip` in `npm test` (https://knip.dev).
 * Entry points are what is run: the CLI (bin/), scripts/, the benchmarks, the tests, the web
 * application and the packages' own entries; everything else must be reached from them.
 */
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  workspaces: {
    '.': {
      entry: [
        'bin/*.js',
        'scripts/*.ts',
        // The benchmarks: what bench/run.ts (`npm run bench`) runs, directly under their kind's folder.
        'bench/{load,scale,peers}/*.ts',
        // Started as child processes by path (bench/peers/peers.ts) or run by hand (bench/profiles/*.md).
        'bench/peers/servers/{bare-fastify,oidc-peer}.ts',
        'bench/lib/{profile-top,stream-micro}.ts',
        'test/**/*.ts',
        'web/src/main.tsx',
        // The single executable's entry, bundled by path (scripts/build-executable.ts).
        'src/app/cli/client-main.ts',
        'web/vite.config.ts',
        // Declaration merging into AppContext and Database (src/kernel): tsc reads them through the
        // tsconfig's include, and no module needs to import them.
        'src/*/context.ts',
        'src/*/tables.ts',
      ],
      project: ['bin/**/*.js', 'src/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts', 'web/src/**/*.{ts,tsx}'],
      ignoreDependencies: [
        // Imported by packages/idp-client's tests through import(String(…)) (it ships no types), which
        // no static analysis follows.
        'oidc-provider',
        // Its bundled jar is found with require.resolve and run with java (test/client/python-client.test.ts).
        '@openapitools/openapi-generator-cli',
        // Its CLI is found with require.resolve and run with Node (scripts/build-executable.ts).
        'postject',
        // Its CLI is found with require.resolve and run with Node as a child process (test/helpers/s3-servers.ts).
        's3rver',
      ],
    },
    'packages/client': {},
    'packages/idp-client': {
      entry: ['scripts/*.ts', 'test/**/*.ts'],
      project: ['src/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'],
    },
  },
  // System tools the tests and benchmarks run when present (OpenSSL, Slurm, XRootD, oidc-agent, …);
  // not npm packages.
  // `dirigo` is this package's own command as installed from its tarball (test/install/npm-package.test.ts).
  ignoreBinaries: ['dirigo', 'openssl', 'mkfifo', 'sha256sum', 'java', 'fish', 'script', 'mount', 'umount', 'unshare', 'taskset', 'xrdcp', 'oidc-gen', 'oidc-agent', 'slurmrestd', 'sbatch', 'scancel', 'scontrol', 'sinfo', 'squeue', 'systemd-analyze', /^g\+\+$/],
  // An export also used in its own module is live code; only exports nothing uses are reported.
  ignoreExportsUsedInFile: true,
};

export default config;
