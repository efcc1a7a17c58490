/** JDL reading and writing, and DIRAC's parametric expansion, without a service. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JdlSyntaxError, parseJdl, renderJdl } from '../../src/protocol/jdl.ts';
import { fillJobId, planParametric } from '../../src/jobs/parametric.ts';

const expandParametric = (raw: unknown, where: string, maxJobs: number) => planParametric(raw, where, maxJobs).expand();

describe('JDL', () => {
  it('reads what DIRAC writes: the wrapper, comments, lists, numbers, names in any case', () => {
    const jdl = `
      [
        /* written by DIRAC's Job API */
        JobName = "analysis";      # a comment
        executable = "run.sh";     // another one
        Arguments = "-n 3 \\"quoted\\"";
        InputSandbox = {"run.sh", "data.txt"};
        OutputSandbox = {"*.root"};
        Site = "Local";
        CPUTime = 3600;
        Priority = "2";
        ExecutionEnvironment = {"A=1", "B=x=y"};
        Tags = {"long", 8};
        LogLevel = "INFO";
        Debug = true
      ]`;
    assert.deepEqual(parseJdl(jdl), {
      JobName: 'analysis',
      Executable: 'run.sh',
      Arguments: '-n 3 "quoted"',
      InputSandbox: ['run.sh', 'data.txt'],
      OutputSandbox: ['*.root'],
      Sites: ['Local'],
      CPUTime: 3600,
      Priority: 2,
      Environment: { A: '1', B: 'x=y' },
      Tags: ['long', '8'],
      LogLevel: 'INFO',
      Debug: true,
    });
    // Without the brackets, and the last ';' left out.
    assert.deepEqual(parseJdl('Executable = "echo"; Parameters = {1, 2.5, "c"}'), { Executable: 'echo', Parameters: [1, 2.5, 'c'] });
    assert.deepEqual(parseJdl('[ parameters.B = {"x"}; ParameterStart.b = -1.5e1; ]'), { 'Parameters.B': ['x'], 'ParameterStart.b': -15 });
  });

  const errors: [string, string, number, number, RegExp][] = [
    ['missing semicolon', '[\n  Executable = "a"\n  Arguments = "b";\n]', 3, 3, /expected ';' after Executable/],
    ['unclosed string', 'Executable = "abc;\n', 1, 14, /string is not closed/],
    ['an expression', '[\n Requirements = other.Site == "X";\n]', 2, 17, /expected a string, a number, true, false or a list, found 'other\.Site'/],
    ['a bare name', 'Executable = run;', 1, 14, /expected a string, a number/],
    ['no value', 'Executable = ;', 1, 14, /found ';'/],
    ['twice', 'Executable = "a";\nEXECUTABLE = "b";', 2, 1, /given twice/],
    ['Site and Sites', 'Site = "a"; Sites = {"b"};', 1, 13, /given twice/],
    ['nested list', 'X = {{"a"}};', 1, 6, /lists cannot hold lists/],
    ['unclosed list', 'X = {"a" "b"};', 1, 10, /expected ',' or '}'/],
    ['unclosed bracket', '[ Executable = "a";', 1, 20, /expected an attribute name or '\]', found the end/],
    ['after the bracket', '[ Executable = "a"; ] X = 1;', 1, 23, /after the closing/],
    ['bad escape', 'X = "a\\qb";', 1, 7, /unknown escape/],
    ['odd character', 'X = 1;\n  @', 2, 3, /unexpected character "@"/],
    ['open comment', 'X = 1; /* no end', 1, 8, /never closed/],
  ];
  for (const [name, text, line, column, message] of errors) {
    it(`refuses ${name}, naming line ${line} and column ${column}`, () => {
      assert.throws(
        () => parseJdl(text, 'job.jdl'),
        (err: unknown) => {
          assert.ok(err instanceof JdlSyntaxError, String(err));
          assert.deepEqual([err.line, err.column], [line, column], err.message);
          assert.match(err.message, message);
          assert.match(err.message, new RegExp(`^job\\.jdl: line ${line}, column ${column}: `));
          return true;
        },
      );
    });
  }

  it('writes JDL that reads back to the same manifest', () => {
    const name = fc.stringMatching(/^[A-Z][A-Za-z0-9_]{0,12}$/).filter((n) => !['Site', 'ExecutionEnvironment', 'Sites', 'Environment'].includes(n));
    const text = fc.string({ unit: 'binary', maxLength: 20 });
    const scalar = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)), fc.boolean());
    const manifest = fc.record(
      {
        Executable: text,
        Sites: fc.array(text, { minLength: 1, maxLength: 3 }),
        Environment: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), text, { maxKeys: 3, noNullPrototype: true }),
        extra: fc.dictionary(name, fc.oneof(scalar, fc.array(scalar, { maxLength: 4 })), { maxKeys: 5, noNullPrototype: true }),
      },
      { requiredKeys: ['Executable'] },
    );
    fc.assert(
      fc.property(manifest, ({ extra, ...known }) => {
        // Keys differing only in case are one attribute in JDL.
        const seen = new Set(Object.keys(known).map((k) => k.toLowerCase()));
        const m: Record<string, unknown> = { ...known };
        for (const [k, v] of Object.entries(extra ?? {})) if (!seen.has(k.toLowerCase()) && !/^(parameters?|parameterstart|parameterstep|parameterfactor)(\.|$)/i.test(k)) {
          seen.add(k.toLowerCase());
          m[k] = v;
        }
        assert.deepEqual(parseJdl(renderJdl(m)), m);
      }),
      { numRuns: 300 },
    );
  });
});

describe('parametric expansion (DIRAC semantics)', () => {
  it('makes one job per listed value, with %s, %n, the set in Parameter.A and ParameterNumber', () => {
    const jobs = expandParametric({ Executable: 'run.sh', Arguments: '%s %n', StdOutput: 'out_%n.txt', Parameters: ['a', 'b', 'c'], JobGroup: 'g' }, 'manifest', 100);
    assert.deepEqual(jobs, [
      { Executable: 'run.sh', Arguments: 'a 0', StdOutput: 'out_0.txt', JobGroup: 'g', ParameterNumber: 0, 'Parameter.A': 'a' },
      { Executable: 'run.sh', Arguments: 'b 1', StdOutput: 'out_1.txt', JobGroup: 'g', ParameterNumber: 1, 'Parameter.A': 'b' },
      { Executable: 'run.sh', Arguments: 'c 2', StdOutput: 'out_2.txt', JobGroup: 'g', ParameterNumber: 2, 'Parameter.A': 'c' },
    ]);
  });

  it('computes a counted sequence: start, then × factor + step; pads %n to the width of the last index', () => {
    const jobs = expandParametric({ Executable: 'x', Arguments: '%s/%n', Parameters: 12, ParameterStart: 1, ParameterStep: 1, ParameterFactor: 2 }, 'm', 100) as Record<string, unknown>[];
    assert.deepEqual(
      jobs.map((j) => j.Arguments),
      ['1/00', '3/01', '7/02', '15/03', '31/04', '63/05', '127/06', '255/07', '511/08', '1023/09', '2047/10', '4095/11'],
    );
    assert.match(String(jobs[0]!.JobGroup), /^parametric-[0-9a-f]{12}$/, 'one group made for the submission');
    assert.ok(jobs.every((j) => j.JobGroup === jobs[0]!.JobGroup));
    const defaults = expandParametric({ Executable: 'x', Arguments: '%s', Parameters: 3, ParameterStep: 5 }, 'm', 10) as Record<string, unknown>[];
    assert.deepEqual(defaults.map((j) => j.Arguments), ['1', '6', '11']);
  });

  it('names sets: Parameters.B lists and ParameterStart.C sequences, used as %(B)s everywhere, sandbox names included', () => {
    const jobs = expandParametric(
      { Executable: 'x', Parameters: 2, 'Parameters.B': ['u', 'v'], 'ParameterStart.C': 10, 'ParameterStep.C': 10, InputSandbox: ['in_%(B)s.dat'], Environment: { RUN: '%(C)s' } },
      'm',
      10,
    ) as Record<string, unknown>[];
    assert.deepEqual(jobs.map((j) => [j.InputSandbox, j.Environment, j['Parameter.B'], j['Parameter.C']]), [
      [['in_u.dat'], { RUN: '10' }, 'u', 10],
      [['in_v.dat'], { RUN: '20' }, 'v', 20],
    ]);
  });

  it('leaves %j for the job id, and a manifest without Parameters alone', () => {
    const [job] = expandParametric({ Executable: 'x', StdOutput: 'out_%j_%n', Parameters: ['a'] }, 'm', 10) as Record<string, unknown>[];
    assert.equal(job!.StdOutput, 'out_%j_0');
    assert.equal(fillJobId(job, 42)!.StdOutput, 'out_42_0');
    const plain = { Executable: 'x', Arguments: '%s' };
    assert.deepEqual(expandParametric(plain, 'm', 10), [plain]);
  });

  it('measures the jobs before making them: their bytes as JSON within a few bytes a job', () => {
    const manifest = { Executable: 'x', Arguments: '%s %n %(B)s', JobName: 'j_%j', Parameters: ['alpha', 'b', 'c"q'], 'Parameters.B': ['1', '22', '333'], JobGroup: 'g' };
    const plan = planParametric(manifest, 'm', 10);
    const jobs = plan.expand();
    const actual = jobs.reduce<number>((n, job) => n + JSON.stringify(fillJobId(job, Number.MAX_SAFE_INTEGER)).length, 0);
    assert.equal(plan.count, 3);
    assert.ok(Math.abs(plan.bytes - actual) <= 4 * plan.count, `measured ${plan.bytes}, made ${actual}`);
    assert.equal(planParametric({ Executable: 'x' }, 'm', 10).bytes, 0, 'a manifest without Parameters is only what was sent');
  });

  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['too many jobs', { Executable: 'x', Parameters: 11 }, /asks for 11 jobs; at most 10 are allowed \(jobs\.maxParametricJobs\)/],
    ['zero jobs', { Executable: 'x', Parameters: 0 }, /Parameters must be a positive number/],
    ['an empty list', { Executable: 'x', Parameters: [] }, /Parameters must be a non-empty list/],
    ['a list of lists', { Executable: 'x', Parameters: [['a']] }, /non-empty list of strings or numbers/],
    ['sets of other lengths', { Executable: 'x', Parameters: 2, 'Parameters.B': ['a'] }, /Parameters\.B has 1 values, but Parameters makes 2 jobs/],
    ['an unknown set', { Executable: 'x', Arguments: '%(Z)s', Parameters: ['a'] }, /%\(Z\)s names the parameter set Z/],
    ['%s without a set', { Executable: 'x', Arguments: '%s', Parameters: 2 }, /%s names the parameter set A/],
    ['a bad set name', { Executable: 'x', Parameters: 1, 'Parameters.a-b': ['x'] }, /set's name/],
    ['a step that is not a number', { Executable: 'x', Parameters: 2, ParameterStep: '1' }, /ParameterStep must be a number/],
  ];
  for (const [name, manifest, message] of refused) {
    it(`refuses ${name}`, () => {
      assert.throws(() => expandParametric(manifest, 'manifest', 10), (err: Error) => {
        assert.match(err.message, /^manifest: /);
        assert.match(err.message, message);
        return true;
      });
    });
  }
});
