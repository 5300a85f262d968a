// The real heartbeat-runner exports a heartbeat against the stand-in model
// (hb-fake-model) to an OTLP/HTTP receiver here, which decodes every request
// with the OpenTelemetry project's published definitions (otlp_decode.js)
// and checks it against the GenAI conventions (conventions_check.js): once
// with the v1.36 names, once with OTEL_SEMCONV_STABILITY_OPT_IN=
// gen_ai_latest_experimental. Positive controls show each check fails on a
// wrongly named span, a misspelt attribute, an unknown field or the other
// version's metrics. Then the operator's span of a heartbeat, made and sent
// by the operator's own code (hb-operator-span), decoded the same way, and
// a heartbeat run with the TRACEPARENT the operator gives that run: its
// invoke_agent span must be the operator span's child.
//
// Env: HB_RUNNER_BINARY, HB_FAKE_MODEL_BINARY, HB_OPERATOR_SPAN_BINARY,
// HB_OTLP_NODE_MODULES (tests/unit/otlp/CMakeLists.txt and run_test.sh set them).
'use strict';

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { test, before, after } = require('node:test');

const { decodeRequest } = require('./otlp_decode');
const { checkTrace, checkMetrics, checkOperatorSpan } = require('./conventions_check');

const kRunTimeoutMs = 60000;
const kRequestBytesMax = 4 * 1024 * 1024;
const kStderrKeptChars = 4096;
const kTraceId = '7c9e6679742540de944be07fc1f90ae7';
const kParentSpanId = 'a3ce929d0e0e4736';
const kExpect = { traceId: kTraceId, parentSpanId: kParentSpanId, agent: 'scout',
                  namespace: 'agents', run: 'scout-7' };
// The run whose uid names kTraceId (api/trace_context.h: run_trace_parent).
const kRunUid = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

function startReceiver() {
  const received = [];  // {path, problems, request}
  const server = http.createServer((req, res) => {
    const chunks = [];
    let bytes = 0;
    req.on('data', (chunk) => {
      bytes += chunk.length;
      if (bytes <= kRequestBytesMax) chunks.push(chunk);
    });
    req.on('end', () => {
      const decoded = bytes > kRequestBytesMax
          ? { request: null, problems: [`a request of ${bytes} bytes`] }
          : decodeRequest(req.url, req.headers['content-type'], Buffer.concat(chunks));
      received.push({ path: req.url, ...decoded });
      res.writeHead(decoded.problems.length ? 400 : 200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, received,
                close: () => new Promise((done) => server.close(done)) });
    });
  });
}

function startFakeModel() {
  const child = spawn(process.env.HB_FAKE_MODEL_BINARY, ['--port', '0'],
                      { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let text = '';
    child.on('error', reject);
    child.stdout.on('data', (chunk) => {
      text += chunk;
      const match = /listening on ([0-9.]+:[0-9]+)/.exec(text);
      if (match) resolve({ url: `http://${match[1]}`, stop: () => child.kill('SIGTERM') });
    });
  });
}

// Runs one heartbeat: its exit code and the end of its stderr.
function runHeartbeat(modelUrl, collectorUrl, extraEnv) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-otlp-'));
  const context = {
    agent: { name: 'scout', namespace: 'agents', type: 'memgpt_agent' },
    model: { provider: 'openai', model: 'fake', baseURL: `${modelUrl}/v1`, maxTokens: 256,
             pricing: { inputCentsPerMillionTokens: 100, outputCentsPerMillionTokens: 200 } },
    persona: 'You are Scout.',
    memory: { blocks: [{ label: 'human', value: '', limit: 200 }] },
    heartbeat: { prompt: 'Check the disk. [[memory disk checked]]' },
    run: { name: 'scout-7', deadline: new Date(Date.now() + 10 * 60000).toISOString() },
  };
  fs.writeFileSync(path.join(dir, 'context.json'), JSON.stringify(context));
  // The sanitizers' settings pass through (scripts/test.sh's second pass).
  const sanitizers = Object.fromEntries(Object.entries(process.env).filter(
      ([name]) => /^(ASAN|UBSAN|LSAN)_OPTIONS$/.test(name)));
  const env = {
    ...sanitizers,
    PATH: process.env.PATH,
    HEARTBEAT_API_KEY: 'sk-otlp-test',
    HEARTBEAT_CONTEXT_PATH: path.join(dir, 'context.json'),
    HEARTBEAT_TERMINATION_PATH: path.join(dir, 'termination-log'),
    HEARTBEAT_TOOLS_LOCAL: '1',
    OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
    TRACEPARENT: `00-${kTraceId}-${kParentSpanId}-01`,
    ...extraEnv,
  };
  const child = spawn(process.env.HB_RUNNER_BINARY, [], { env, cwd: dir,
                                                          stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-kStderrKeptChars); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the runner did not finish in time'));
    }, kRunTimeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({ code, stderr });
    });
  });
}

// The operator's span of run kRunUid, sent to collectorUrl by the
// operator's code; resolves to the TRACEPARENT that run's runner gets.
function exportOperatorSpan(collectorUrl) {
  const child = spawn(process.env.HB_OPERATOR_SPAN_BINARY, [kRunUid, collectorUrl],
                      { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-kStderrKeptChars); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('hb-operator-span did not finish in time'));
    }, kRunTimeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      // Its first line; the operator's log lines follow it.
      const traceparent = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/m.exec(stdout);
      if (code !== 0 || !traceparent) {
        reject(new Error(`hb-operator-span exited ${code}:\n${stdout}\n${stderr}`));
      } else {
        resolve(traceparent[0]);
      }
    });
  });
}

function bySignal(received, signal) {
  return received.filter((r) => r.path === signal).map((r) => r.request);
}

let model;
const runs = {};  // 'v1.36' | 'latest' | 'linked' -> the receiver's requests
let operatorReceived = [];  // hb-operator-span's requests

before(async () => {
  model = await startFakeModel();
  for (const [name, env] of [['v1.36', {}],
                             ['latest', { OTEL_SEMCONV_STABILITY_OPT_IN: 'gen_ai_latest_experimental' }]]) {
    const receiver = await startReceiver();
    const { code, stderr } = await runHeartbeat(model.url, receiver.url, env);
    await receiver.close();
    assert.equal(code, 0, `the ${name} heartbeat exited ${code}:\n${stderr}`);
    runs[name] = receiver.received;
  }
  const operatorReceiver = await startReceiver();
  const traceparent = await exportOperatorSpan(operatorReceiver.url);
  await operatorReceiver.close();
  operatorReceived = operatorReceiver.received;
  const receiver = await startReceiver();
  const { code, stderr } = await runHeartbeat(model.url, receiver.url, { TRACEPARENT: traceparent });
  await receiver.close();
  assert.equal(code, 0, `the linked heartbeat exited ${code}:\n${stderr}`);
  runs.linked = receiver.received;
});

after(() => model && model.stop());

for (const name of ['v1.36', 'latest']) {
  test(`${name}: every request decodes with the OTLP definitions`, () => {
    const received = runs[name];
    assert.ok(received.some((r) => r.path === '/v1/traces'), 'no trace request');
    assert.ok(received.some((r) => r.path === '/v1/metrics'), 'no metrics request');
    for (const r of received) assert.deepEqual(r.problems, [], `${r.path}`);
  });

  test(`${name}: one trace in the conventions' names, continuing TRACEPARENT`, () => {
    assert.deepEqual(checkTrace(bySignal(runs[name], '/v1/traces'), kExpect), []);
  });

  test(`${name}: the client metrics in the chosen conventions' names`, () => {
    assert.deepEqual(checkMetrics(bySignal(runs[name], '/v1/metrics'), name === 'latest'), []);
  });
}

const kExpectOperator = { traceId: kTraceId, agent: 'scout', namespace: 'agents', run: 'scout-7' };

test('operator: its span decodes with the OTLP definitions', () => {
  assert.ok(operatorReceived.length > 0, 'no request from the operator');
  for (const r of operatorReceived) {
    assert.equal(r.path, '/v1/traces');
    assert.deepEqual(r.problems, [], r.path);
  }
});

test("operator: one schedule_heartbeat span, the parent of the runner's invoke_agent", () => {
  assert.deepEqual(checkOperatorSpan(bySignal(operatorReceived, '/v1/traces'),
                                     bySignal(runs.linked, '/v1/traces'), kExpectOperator), []);
  const [operatorSpan] = bySignal(operatorReceived, '/v1/traces')[0].resourceSpans[0].scopeSpans[0].spans;
  assert.deepEqual(checkTrace(bySignal(runs.linked, '/v1/traces'),
                              { ...kExpect, parentSpanId: operatorSpan.spanId }), []);
});

// --- positive controls: the checks above can fail ---

function tracesWith(change) {
  const requests = structuredClone(bySignal(runs['v1.36'], '/v1/traces'));
  for (const request of requests) {
    for (const rs of request.resourceSpans) {
      for (const ss of rs.scopeSpans) ss.spans.forEach(change);
    }
  }
  return requests;
}

test('control: a wrongly named chat span fails the trace check', () => {
  const requests = tracesWith((span) => {
    if (span.name.startsWith('chat ')) span.name = 'chat_completion fake';
  });
  assert.ok(checkTrace(requests, kExpect).some((p) => p.includes('named')));
});

test('control: a misspelt attribute fails the trace check', () => {
  const requests = tracesWith((span) => {
    for (const a of span.attributes) if (a.key === 'gen_ai.provider.name') a.key = 'gen_ai.system';
  });
  assert.ok(checkTrace(requests, kExpect).some((p) => p.includes('gen_ai.system')));
});

test('control: a trace that ignores TRACEPARENT fails the trace check', () => {
  const requests = tracesWith((span) => { span.traceId = '4bf92f3577b34da6a3ce929d0e0e4736'; });
  assert.notDeepEqual(checkTrace(requests, kExpect), []);
});

test('control: an unknown field, a short id or a named enum fails decoding', () => {
  const span = { traceId: kTraceId, spanId: kParentSpanId, name: 'chat fake', kind: 3,
                 startTimeUnixNano: '1', endTimeUnixNano: '2' };
  const body = (s) => Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [s] }] }] }));
  assert.deepEqual(decodeRequest('/v1/traces', 'application/json', body(span)).problems, []);
  for (const bad of [{ ...span, spanID: kParentSpanId }, { ...span, spanId: 'abc' },
                     { ...span, kind: 'SPAN_KIND_CLIENT' }]) {
    assert.notDeepEqual(decodeRequest('/v1/traces', 'application/json', body(bad)).problems, [],
                        JSON.stringify(bad));
  }
});

test("control: each version's metrics fail the other version's check", () => {
  assert.notDeepEqual(checkMetrics(bySignal(runs['v1.36'], '/v1/metrics'), true), []);
  assert.notDeepEqual(checkMetrics(bySignal(runs.latest, '/v1/metrics'), false), []);
});

test("control: a runner trace that is not the operator span's child fails the link check", () => {
  assert.ok(checkOperatorSpan(bySignal(operatorReceived, '/v1/traces'),
                              bySignal(runs['v1.36'], '/v1/traces'), kExpectOperator)
      .some((p) => p.includes('is not the operator span')));
});

test('control: a renamed operator span or a GenAI attribute on it fails the check', () => {
  const requests = structuredClone(bySignal(operatorReceived, '/v1/traces'));
  const span = requests[0].resourceSpans[0].scopeSpans[0].spans[0];
  span.name = 'create_job';
  span.attributes.push({ key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } });
  const problems = checkOperatorSpan(requests, bySignal(runs.linked, '/v1/traces'), kExpectOperator);
  assert.ok(problems.some((p) => p.includes('named')));
  assert.ok(problems.some((p) => p.includes('gen_ai.operation.name')));
});
